package scenario

import (
	"errors"
	"fmt"

	"github.com/fairslice/fairslice/shufflesharding"
)

// Validate reports every problem with c at once. Queues must be -1, 0 or a
// deck size that, with HandSize, makes a valid shuffle-sharding dealer (the
// rules of upstream's NewDealer); QueueLengthLimit and ConcurrencyLimit must
// be non-negative. HandSize and QueueLengthLimit are not checked when
// Queues ≤ 0, because those modes ignore them.
func (c Config) Validate() error {
	return errors.Join(c.problems()...)
}

func (c Config) problems() []error {
	var errs []error
	switch {
	case c.Queues < -1:
		errs = append(errs, fmt.Errorf("queues %d is invalid (want -1 for exempt, 0 for no queuing, or 1..%d)", c.Queues, MaxQueues))
	case c.Queues > MaxQueues:
		errs = append(errs, fmt.Errorf("queues %d exceeds the maximum %d", c.Queues, MaxQueues))
	case c.Queues >= 1:
		if _, err := shufflesharding.NewDealer(c.Queues, c.HandSize); err != nil {
			errs = append(errs, fmt.Errorf("handSize %d with queues %d: %v", c.HandSize, c.Queues, err))
		}
		if c.QueueLengthLimit < 0 || c.QueueLengthLimit > MaxQueueLengthLimit {
			errs = append(errs, fmt.Errorf("queueLengthLimit %d is outside [0, %d]", c.QueueLengthLimit, MaxQueueLengthLimit))
		}
	}
	if c.ConcurrencyLimit < 0 || c.ConcurrencyLimit > MaxConcurrencyLimit {
		errs = append(errs, fmt.Errorf("concurrencyLimit %d is outside [0, %d]", c.ConcurrencyLimit, MaxConcurrencyLimit))
	}
	return errs
}
