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
