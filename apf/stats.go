package apf

import "github.com/fairslice/fairslice/fairqueue"

// LevelStats is a cheap snapshot of one priority level's fair queue set,
// for metrics read at scrape time.
type LevelStats struct {
	Name string
	// VirtualTime is R as of the level's last event (upstream's current_r).
	VirtualTime fairqueue.SeatSeconds
	// Counts are the queue set's totals; Counts.EpochAdvances is upstream's
	// epoch_advance_total.
	Counts fairqueue.Counts
}

// Stats returns LevelStats of every priority level (quiescing ones
// included), in name order. Unlike Dump it costs O(levels) and allocates
// only the result.
func (c *Controller) Stats() []LevelStats {
	c.mu.Lock()
	levels := c.sortedLevels()
	c.mu.Unlock()
	out := make([]LevelStats, len(levels))
	for i, lv := range levels {
		lv.mu.Lock()
		out[i] = LevelStats{Name: lv.name, VirtualTime: lv.qs.VirtualTime(), Counts: lv.qs.Counts()}
		lv.mu.Unlock()
	}
	return out
}

// ObserveWatchCount reports to the Observer, if it is a
// WatchCountObserver, the number of watches the work estimate of a
// request classified as cl counted. The Handler middleware calls it from
// its WorkFunc (WorkEstimator.EstimateWatchCount); a caller of Wait with
// its own WorkFunc calls it the same way.
func (c *Controller) ObserveWatchCount(cl *Classification, watches int) {
	if o, ok := c.obs.(WatchCountObserver); ok {
		o.WatchCount(cl.PriorityLevel, cl.FlowSchema, watches)
	}
}
