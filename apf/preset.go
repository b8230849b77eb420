package apf

import (
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/seats"
)

// StandaloneOptions returns the Options for a server that is not a
// Kubernetes API server and so need not decide exactly as one: every fix of
// a known upstream bug is on, and a level with no seats gets some as soon
// as a request waits for it. Set its other fields (Clock, Observer) as
// usual.
//
// It turns on AdjustOnStarvation, seats.BorrowingOptions'
// SubtractExemptUsage (limits never add up to more than the server while
// exempt requests run), and fairqueue.Config's FixZeroLimitAdmission,
// ClampFinalSeatsWithoutQueues and FixStaleQueueRemoval. The zero Options
// (with ServerConcurrencyLimit) decide as kube-apiserver does, bugs
// included.
func StandaloneOptions(serverConcurrencyLimit int) Options {
	return Options{
		ServerConcurrencyLimit: serverConcurrencyLimit,
		AdjustOnStarvation:     true,
		Borrowing:              seats.BorrowingOptions{SubtractExemptUsage: true},
		QueueSet: fairqueue.Config{
			FixZeroLimitAdmission:        true,
			ClampFinalSeatsWithoutQueues: true,
			FixStaleQueueRemoval:         true,
		},
	}
}
