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
// FixStaleQueueRemoval, an optional extension field, turns on
// fairqueue.Config.FixStaleQueueRemoval: the final-seat release of a
// request whose queue was already removed removes no other queue, so no
// waiting request is stranded. Upstream has no such option; the kube
// module's upstream engine rejects scenarios that set it.
type Config struct {
	Queues               int  `json:"queues"`
	HandSize             int  `json:"handSize"`
	QueueLengthLimit     int  `json:"queueLengthLimit"`
	ConcurrencyLimit     int  `json:"concurrencyLimit"`
	FixStaleQueueRemoval bool `json:"fixStaleQueueRemoval,omitempty"`
}

// Request is one request of a scenario. All times are offsets from time 0,
// the epoch of the file's durations.
type Request struct {
	// ID names the request in the output; ids are unique within a scenario.
	ID string
	// Arrival is when the request arrives.
	Arrival time.Duration
	// Hash is the flow hash that shuffle sharding deals a hand from. It is
	// also the flow identity in the summary.
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
