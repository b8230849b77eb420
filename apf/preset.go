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
// SubtractExemptUsage (the levels' limits do not grow by the seats exempt
// requests use, as upstream's do), and fairqueue.Config's
// FixZeroLimitAdmission,
// ClampFinalSeatsWithoutQueues and FixStaleQueueRemoval. The zero Options
// (with ServerConcurrencyLimit) decide as kube-apiserver does, bugs
// included.
//
// The limits still add up to about the sum of the levels' nominal
// limits, which upstream's rounding up makes more than the server's seats
// (every level with shares gets at least one): with the default
// configuration, 8 seats at a ServerConcurrencyLimit of 2 and 601 at 600.
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
