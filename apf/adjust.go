package apf

import (
	"time"
)

// scheduleAdjust arms the timer of the next periodic adjustment.
func (c *Controller) scheduleAdjust() {
	c.adjMu.Lock()
	defer c.adjMu.Unlock()
	if c.closed.Load() {
		return
	}
	c.adjTimer = c.clock.AfterFunc(c.period, c.periodicAdjust)
}

// periodicAdjust is the timer's function: one adjustment, then the next
// timer. Close waits for one that has started.
func (c *Controller) periodicAdjust() {
	c.adjMu.Lock()
	if c.closed.Load() {
		c.adjMu.Unlock()
		return
	}
	c.adjRunning.Add(1)
	c.adjMu.Unlock()
	defer c.adjRunning.Done()
	c.AdjustBorrowing(c.clock.Now())
	c.scheduleAdjust()
}

// starved runs the adjustment of Options.AdjustOnStarvation for a request
// that has started waiting at a level with no seats.
func (c *Controller) starved() {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() || (!c.lastStarved.IsZero() && now.Sub(c.lastStarved) < StarvationAdjustInterval) {
		return
	}
	c.lastStarved = now
	c.adjustLocked(now)
}

// AdjustBorrowing runs the periodic borrowing adjustment at now: every
// level's seat demand over the period is summarized and smoothed, and the
// server's concurrency is re-divided as upstream does every 10 seconds.
// The controller calls it itself every Options.AdjustPeriod unless that is
// ManualAdjustment; it may also be called at any other time.
func (c *Controller) AdjustBorrowing(now time.Time) {
	if c.closed.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adjustLocked(now)
}

// AdjustBorrowingHolding, beyond upstream, is AdjustBorrowing in one step
// with SetCurrentLimits(now, hold): the demand statistics are folded and
// the borrowing computed as AdjustBorrowing does, but the levels named in
// hold get the held current limits (within their Lower and Upper bounds)
// instead of the borrowing's, so no queued request is dispatched at the
// borrowing's limit in between. It returns the borrowing's current limits
// by level name, what AdjustBorrowing would have applied. With hold nil
// it is exactly AdjustBorrowing (and returns nil). Package apf/fleet's
// Coordinator calls it with the fleet's last decision, which the next
// exchange then replaces.
func (c *Controller) AdjustBorrowingHolding(now time.Time, hold map[string]int) map[string]int {
	if c.closed.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adjustHoldingLocked(now, hold)
}
