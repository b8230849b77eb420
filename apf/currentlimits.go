package apf

import "time"

// ServerConcurrencyLimit returns Options.ServerConcurrencyLimit.
func (c *Controller) ServerConcurrencyLimit() int { return c.serverCL }

// Limits returns every priority level's limits and demand statistics as
// of the last adjustment (quiescing levels included), by name. O(levels).
func (c *Controller) Limits() map[string]Limits {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Limits, len(c.levels))
	for name, lv := range c.levels {
		out[name] = lv.limits
	}
	return out
}

// SetCurrentLimits, beyond upstream, replaces the current limit of the
// named priority levels at now, each kept within its Lower and Upper
// bounds; levels not named, and names of no level, are left alone. The
// limits hold until the next borrowing adjustment recomputes them, so a
// caller that decides them (package apf/fleet's Coordinator) runs the
// adjustment itself (Options.AdjustPeriod = ManualAdjustment) and sets
// them after each. The Observer gets LevelLimits for every level changed.
func (c *Controller) SetCurrentLimits(now time.Time, current map[string]int) {
	if c.closed.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, lv := range c.sortedLevels() {
		cl, ok := current[lv.name]
		if !ok || lv.exempt {
			continue
		}
		cl = min(max(cl, lv.limits.Lower), lv.limits.Upper)
		lv.limits.Current = cl
		lv.limits.ConcurrencyDenominator = c.concurrencyDenominator(cl)
		// Validated when the level was created, as in adjustLocked.
		_ = lv.reconfigure(now, queueConfig(&lv.spec, cl, c.base))
		c.obs.LevelLimits(lv.name, lv.limits)
	}
}
