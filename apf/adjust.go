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
	c.planLocked(now, true, nil)
}

// AdjustBorrowing runs the periodic borrowing adjustment at now: every
// level's seat demand over the period is summarized and smoothed, and the
// total is re-divided as upstream does every 10 seconds (a seat plan; see
// the package doc, "Where seats are decided"). The controller calls it
// itself every Options.AdjustPeriod unless that is ManualAdjustment; it
// may also be called at any other time.
func (c *Controller) AdjustBorrowing(now time.Time) {
	if c.closed.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.planLocked(now, true, nil)
}

// Replan makes a seat plan at now without folding in any demand: the
// total is re-divided with the demand statistics of the last adjustment,
// and Options.SeatPolicy is asked again. A SeatPolicy calls it when its
// decision changes, so that the decision is in force before the next
// adjustment.
func (c *Controller) Replan(now time.Time) {
	if c.closed.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.planLocked(now, false, nil)
}
