package apf

import (
	"context"
	"fmt"
	"time"
)

// ShutdownRetryAfter is the Retry-After, in seconds, of a request refused
// because the controller is shutting down or closed: upstream's API server
// answers 5 while it shuts down.
const ShutdownRetryAfter = 5

// ClosedError is the error of a request refused because the controller is
// shutting down or closed, or ended by Close while it waited. It matches
// ErrClosed with errors.Is and carries where the request was classified,
// so that the middleware can answer with the PF headers.
type ClosedError struct {
	Classification Classification
	// RetryAfter is ShutdownRetryAfter.
	RetryAfter int64
}

// Error names the priority level.
func (e *ClosedError) Error() string {
	return fmt.Sprintf("%v (request to priority level %q)", ErrClosed, e.Classification.PriorityLevel)
}

// Is reports whether target is ErrClosed.
func (e *ClosedError) Is(target error) bool { return target == ErrClosed }

func (c *Controller) closedError(cl Classification) *ClosedError {
	return &ClosedError{Classification: cl, RetryAfter: ShutdownRetryAfter}
}

// Shutdown stops admitting requests (Wait refuses new ones with a
// ClosedError), lets the requests already executing or waiting in a queue
// run to their Finish until ctx ends, and then closes the controller
// (Close: whatever still waits ends with a ClosedError). It returns nil if
// everything finished, else ctx's error.
//
// With an http.Server, call srv.Shutdown(ctx) first: it stops accepting
// connections and waits for the handlers in progress, which include the
// requests waiting in APF's queues, so they are served rather than
// refused; then call c.Shutdown(ctx), which ends any left when ctx ended.
// Calling c.Shutdown first refuses the requests that keep-alive
// connections still send while the server drains.
func (c *Controller) Shutdown(ctx context.Context) error {
	c.draining.Store(true)
	defer c.Close()
	poll := time.Millisecond
	for !c.idle() {
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		poll = min(2*poll, 50*time.Millisecond)
	}
	return nil
}

// idle reports whether no level has a request waiting or executing.
func (c *Controller) idle() bool {
	c.mu.Lock()
	levels := c.sortedLevels()
	c.mu.Unlock()
	for _, lv := range levels {
		lv.mu.Lock()
		idle := lv.qs.IsIdle() && lv.held == 0
		lv.mu.Unlock()
		if !idle {
			return false
		}
	}
	return true
}
