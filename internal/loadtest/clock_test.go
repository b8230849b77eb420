package loadtest

import (
	"context"
	"slices"
	"sync"
	"time"
)

// simClock is a simulated clock for run: time stands still while any
// sender is busy (sending a request, recording it) and, once every sender
// that has not returned waits in SleepUntil (or its request in Hold), jumps
// to the earliest wake-up. A run on it depends on its Config and the
// server's Holds alone, not on the machine's speed; a request takes the
// simulated time its handler holds, none without.
type simClock struct {
	mu        sync.Mutex
	now       time.Time
	live      int // senders started and not returned
	sleepers  []*sleeper
	deadlines []deadline
}

type sleeper struct {
	at   time.Time
	wake chan struct{}
}

type deadline struct {
	at     time.Time
	cancel context.CancelFunc
}

func newSimClock() *simClock { return &simClock{now: time.Unix(1e9, 0)} }

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *simClock) WithDeadline(ctx context.Context, d time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !d.After(c.now) {
		cancel()
	} else {
		c.deadlines = append(c.deadlines, deadline{d, cancel})
	}
	return ctx, cancel
}

func (c *simClock) Start(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live += n
}

func (c *simClock) Done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live--
	c.advanceLocked()
}

func (c *simClock) SleepUntil(ctx context.Context, t time.Time) bool {
	c.mu.Lock()
	if !t.After(c.now) {
		c.mu.Unlock()
		return ctx.Err() == nil
	}
	s := &sleeper{at: t, wake: make(chan struct{})}
	c.sleepers = append(c.sleepers, s)
	c.advanceLocked()
	c.mu.Unlock()
	select {
	case <-s.wake:
		return ctx.Err() == nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		if i := slices.Index(c.sleepers, s); i >= 0 {
			c.sleepers = slices.Delete(c.sleepers, i, i+1)
		}
		return false
	}
}

// advanceLocked moves time to the next wake-up once every live sender
// sleeps, ending on the way the contexts of the deadlines it passes (their
// sleepers leave, or wake to find their context ended).
func (c *simClock) advanceLocked() {
	if len(c.sleepers) == 0 || len(c.sleepers) < c.live {
		return
	}
	next := c.sleepers[0].at
	for _, s := range c.sleepers {
		if s.at.Before(next) {
			next = s.at
		}
	}
	kept := c.deadlines[:0]
	for _, d := range c.deadlines {
		if d.at.After(next) {
			kept = append(kept, d)
		} else {
			d.cancel()
		}
	}
	c.deadlines = kept
	c.now = next
	awake := c.sleepers[:0]
	for _, s := range c.sleepers {
		if s.at.Equal(next) {
			close(s.wake)
		} else {
			awake = append(awake, s)
		}
	}
	c.sleepers = awake
}

// Hold, called by a test server's handler, takes d of simulated time for
// the request: the handler sleeps in place of the sender that waits for
// its response.
func (c *simClock) Hold(d time.Duration) {
	c.SleepUntil(context.Background(), c.Now().Add(d))
}
