package fairqueue

import (
	"errors"
	"fmt"
	"time"

	"github.com/fairslice/fairslice/shufflesharding"
)

// EstimatedServiceDuration is G, the service time the dispatcher assumes for
// every request's initial phase when it charges a queue in virtual time.
// Upstream hard-codes 3 ms (its package doc still says one minute).
const EstimatedServiceDuration = 3 * time.Millisecond

// ExemptQueues is the Queues value that selects the exempt mode: every
// request is dispatched at once and never limited, though its seats are
// still counted. Any negative value means the same, as upstream.
const ExemptQueues = -1

// Config describes one queue set (one priority level, in APF terms).
//
// The mode follows from Queues, as upstream's DesiredNumQueues:
//   - Queues > 0: queuing. Requests are shuffle-sharded onto Queues queues
//     with hands of HandSize, at most QueueLengthLimit requests wait per queue
//     (when no seat is free), and they are dispatched in fair order.
//   - Queues == 0: no queuing. A request is admitted if its seats fit under
//     ConcurrencyLimit, else rejected with ReasonConcurrencyLimit.
//   - Queues < 0: exempt. Every request is admitted at once.
//
// When a reconfiguration sets Queues ≤ 0, HandSize and QueueLengthLimit keep
// their previous values, so that the existing queues drain as before.
type Config struct {
	// Name identifies the queue set in Dump output (the priority level name).
	Name string

	// Queues is the number of queues (deck size); see the type doc for 0 and
	// negative values.
	Queues int

	// HandSize is the number of queues dealt to each flow. Validated together
	// with Queues by shufflesharding.NewDealer when Queues > 0.
	HandSize int

	// QueueLengthLimit is the number of waiting requests a queue may hold
	// before arrivals to it are rejected while all seats are in use.
	QueueLengthLimit int

	// ConcurrencyLimit is the number of seats available to requests.
	ConcurrencyLimit int

	// ServiceDuration overrides G; zero means EstimatedServiceDuration.
	ServiceDuration time.Duration

	// FixZeroLimitAdmission, when set, makes a queue set whose
	// ConcurrencyLimit is 0 admit nothing. Upstream (kubernetes#134196)
	// admits one request at a time into such a set whenever nothing is
	// executing, through the rule that lets a request wider than the limit
	// run alone.
	FixZeroLimitAdmission bool

	// ClampFinalSeatsWithoutQueues, when set, applies the final-seats clamp
	// (FinalSeats above ConcurrencyLimit are lowered to it and
	// AdditionalLatency is stretched to keep the work) also to requests
	// admitted without a queue when Queues == 0. Upstream
	// (kubernetes#107964) clamps only requests dispatched from a queue.
	// The clamp is skipped when ConcurrencyLimit is 0.
	ClampFinalSeatsWithoutQueues bool

	// FixStaleQueueRemoval, when set, makes the final release of a request
	// whose queue was already removed (by attrition, after Queues was
	// lowered) remove nothing: a queue is removed only when that very queue
	// is empty and surplus, so no queue holding requests is dropped and no
	// waiting request is stranded. Upstream removes the queue found at the
	// removed queue's last index, which may be another, busy queue; its
	// waiting requests then never dispatch (upstream crashes at its next
	// dispatch, this package leaves them until they are cancelled).
	// Setting it by Reconfigure does not recover requests already stranded.
	FixStaleQueueRemoval bool
}

func (c *Config) serviceDuration() time.Duration {
	if c.ServiceDuration > 0 {
		return c.ServiceDuration
	}
	return EstimatedServiceDuration
}

// validate checks c and returns the dealer it calls for (nil when
// c.Queues ≤ 0). All problems are reported at once.
func (c *Config) validate() (*shufflesharding.Dealer, error) {
	var errs []error
	var dealer *shufflesharding.Dealer
	if c.Queues > 0 {
		d, err := shufflesharding.NewDealer(c.Queues, c.HandSize)
		if err != nil {
			errs = append(errs, fmt.Errorf("fairqueue: Queues=%d, HandSize=%d is not a valid shuffle sharding config: %w", c.Queues, c.HandSize, err))
		}
		dealer = d
		if c.QueueLengthLimit < 0 {
			errs = append(errs, fmt.Errorf("fairqueue: QueueLengthLimit=%d must not be negative", c.QueueLengthLimit))
		}
	}
	if c.ConcurrencyLimit < 0 {
		errs = append(errs, fmt.Errorf("fairqueue: ConcurrencyLimit=%d must not be negative", c.ConcurrencyLimit))
	}
	if c.ServiceDuration < 0 {
		errs = append(errs, fmt.Errorf("fairqueue: ServiceDuration=%v must not be negative", c.ServiceDuration))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return dealer, nil
}

// Validate reports every problem with c, as NewQueueSet and Reconfigure
// would, or nil if c is valid.
func (c Config) Validate() error {
	_, err := c.validate()
	return err
}
