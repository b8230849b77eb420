package scenario

import (
	"time"
)

// Config is the queue-set configuration of a scenario, in the file's
// vocabulary. Queues ≥ 1 selects fair queuing with shuffle sharding over
// that many queues, 0 selects the no-queuing mode (the concurrency limit
// only) and -1 the exempt mode (every request is dispatched at once).
// HandSize and QueueLengthLimit matter only when Queues ≥ 1.
//
// The Fix… and Clamp… fields, optional extension fields, turn on
// fairqueue.Config's options of the same names, which depart from upstream
// where it has a bug:
//   - FixStaleQueueRemoval: the final-seat release of a request whose
//     queue was already removed removes no other queue, so no waiting
//     request is stranded;
//   - FixZeroLimitAdmission: a concurrency limit of 0 admits nothing
//     (upstream admits one request at a time when nothing executes,
//     kubernetes#134196);
//   - ClampFinalSeatsWithoutQueues: the final-seats clamp applies in the
//     no-queuing mode too (kubernetes#107964).
//
// Upstream has no such options; the kube module's upstream engine rejects
// scenarios that set any of them.
type Config struct {
	Queues                       int  `json:"queues"`
	HandSize                     int  `json:"handSize"`
	QueueLengthLimit             int  `json:"queueLengthLimit"`
	ConcurrencyLimit             int  `json:"concurrencyLimit"`
	FixStaleQueueRemoval         bool `json:"fixStaleQueueRemoval,omitempty"`
	FixZeroLimitAdmission        bool `json:"fixZeroLimitAdmission,omitempty"`
	ClampFinalSeatsWithoutQueues bool `json:"clampFinalSeatsWithoutQueues,omitempty"`
}

// Options returns the file names of the fairslice-only options (the Fix…
// and Clamp… fields) that c sets, in a fixed order; none for a
// configuration upstream can run.
func (c Config) Options() []string {
	var names []string
	for _, o := range []struct {
		name string
		set  bool
	}{
		{"fixStaleQueueRemoval", c.FixStaleQueueRemoval},
		{"fixZeroLimitAdmission", c.FixZeroLimitAdmission},
		{"clampFinalSeatsWithoutQueues", c.ClampFinalSeatsWithoutQueues},
	} {
		if o.set {
			names = append(names, o.name)
		}
	}
	return names
}

// Request is one request of a scenario. All times are offsets from time 0,
// the epoch of the file's durations.
type Request struct {
	// ID names the request in the output; ids are unique within a scenario.
	ID string
	// Arrival is when the request arrives.
	Arrival time.Duration
	// Hash is the flow hash that shuffle sharding deals a hand from. It is
	// also the flow identity in the summary. In the file it is an unsigned
	// integer literal, or a string holding one in decimal or, with a 0x
	// prefix, in hexadecimal (as "fairslice deal" prints it).
	Hash uint64
	// InitialSeats is the number of seats occupied while executing (≥ 1).
	InitialSeats int
	// FinalSeats is the number of seats occupied during AdditionalLatency.
	FinalSeats int
	// AdditionalLatency is how long the seats stay reserved after the
	// request completes.
	AdditionalLatency time.Duration
	// Duration is the execution time once dispatched.
	Duration time.Duration
	// WaitLimit is how long the request may wait in a queue before it is
	// removed with reason time-out; 0 means no limit.
	WaitLimit time.Duration
}

// Reconfiguration replaces the configuration at a given instant. It is an
// extension of the file format (the "reconfigurations" array).
type Reconfiguration struct {
	At     time.Duration
	Config Config
}

// Scenario is a parsed, validated scenario file.
type Scenario struct {
	Config           Config
	Requests         []Request
	Reconfigurations []Reconfiguration
}

// Limits on values accepted by Parse. They keep the fixed-point arithmetic
// of the queue sets far from overflow; real APF configurations are orders
// of magnitude below them.
const (
	// MaxQueues bounds config.queues, so that a file cannot make a queue
	// set allocate millions of queues.
	MaxQueues = 1 << 16
	// MaxSeats bounds initialSeats and finalSeats.
	MaxSeats = 1 << 20
	// MaxConcurrencyLimit bounds config.concurrencyLimit.
	MaxConcurrencyLimit = 1 << 20
	// MaxQueueLengthLimit bounds config.queueLengthLimit.
	MaxQueueLengthLimit = 1 << 20
	// MaxDuration bounds every duration in the file (arrival, duration,
	// additionalLatency, waitLimit, reconfiguration times): 1000 hours.
	MaxDuration = 1000 * time.Hour
)
