package apf

import (
	"math"
	"time"

	"github.com/fairslice/fairslice/flowschema"
)

// setTotalLocked is the one place where the levels' limits follow from
// a total: it makes total the seats divided among the levels, recomputes
// their static limits from their shares (setStaticLocked) and re-divides
// the current limits by borrowing with the demand already measured
// (divideLocked). The static total (Options.ServerConcurrencyLimit) is set
// once; the adaptive total (adaptive.go) calls it when its total moves.
// Called with c.mu held.
func (c *Controller) setTotalLocked(now time.Time, total int) {
	c.total = total
	c.setStaticLocked(nil)
	c.divideLocked(now, nil)
}

// setStaticLocked recomputes every live level's static limits from the
// shares of all of them (quiescing ones included, as upstream) and the
// current total. Levels in created start at their initial limit with no
// demand history. Called with c.mu held.
func (c *Controller) setStaticLocked(created []*level) {
	levels := c.sortedLevels()
	specs := make([]flowschema.PriorityLevelConfiguration, len(levels))
	for i, lv := range levels {
		specs[i] = lv.spec
	}
	lims, err := flowschema.ComputeLimits(c.total, specs)
	if err != nil {
		return // unvalidated negative shares: keep the previous limits
	}
	for i, lv := range levels {
		l := lims[i]
		lv.static = l
		lv.limits.Nominal, lv.limits.Lendable, lv.limits.Borrowing = l.NominalCL, l.LendableCL, l.BorrowingCL
		lv.limits.Lower, lv.limits.Upper, lv.limits.MaxSeats = l.MinCL, l.MaxCL, uint64(l.MaxSeats)
		lv.maxSeats.Store(uint64(l.MaxSeats))
		lv.limits.QueueCapacity = queueCapacity(&lv.spec)
		lv.limits.Queues, lv.limits.QueueLengthLimit = 0, 0
		if q := lv.spec.Spec.Limited; q != nil && q.LimitResponse.Queuing != nil {
			lv.limits.Queues, lv.limits.QueueLengthLimit = int(q.LimitResponse.Queuing.Queues), int(q.LimitResponse.Queuing.QueueLengthLimit)
		}
	}
	for _, lv := range created {
		lv.limits.Current = lv.static.InitialCL
		lv.limits.ConcurrencyDenominator = c.concurrencyDenominator(lv.limits.Current)
		lv.demand = flowschema.SeatDemand{}
	}
}

// adjustLocked runs one borrowing adjustment at now (upstream's
// updateBorrowingLocked): every level's demand over the period is folded
// into its statistics, and the total is re-divided. Called with c.mu held.
func (c *Controller) adjustLocked(now time.Time) {
	c.adjustHoldingLocked(now, nil)
}

// adjustHoldingLocked is adjustLocked, except that the levels named in
// hold get those current limits instead of the borrowing's (see
// AdjustBorrowingHolding). It returns the borrowing's current limits by
// level name when hold is not nil, else nil. Called with c.mu held.
func (c *Controller) adjustHoldingLocked(now time.Time, hold map[string]int) map[string]int {
	for _, lv := range c.sortedLevels() {
		lv.mu.Lock()
		res := lv.qs.ResetDemand(now)
		lv.mu.Unlock()
		lv.demand.Update(res)
	}
	return c.divideLocked(now, hold)
}

// divideLocked divides the total among the levels by borrowing
// (flowschema.Borrow) from their static limits and demand statistics, and
// applies the new current limits to the queue sets, or for the levels
// named in hold the held ones (within each level's bounds). It returns
// the borrowing's current limits by name when hold is not nil. Called
// with c.mu held.
func (c *Controller) divideLocked(now time.Time, hold map[string]int) map[string]int {
	levels := c.sortedLevels()
	in := make([]flowschema.BorrowingLevel, len(levels))
	for i, lv := range levels {
		in[i] = flowschema.BorrowingLevel{Limits: lv.static, Demand: lv.demand, CurrentCL: lv.limits.Current}
	}
	a := flowschema.Borrow(c.total, in, c.borrow)
	var own map[string]int
	if hold != nil {
		own = make(map[string]int, len(levels))
	}
	for i, lv := range levels {
		la := &a.Levels[i]
		cl := la.CurrentCL
		if own != nil {
			own[lv.name] = cl
		}
		if h, ok := hold[lv.name]; ok && !lv.exempt {
			cl = min(max(h, lv.limits.Lower), lv.limits.Upper)
		}
		lv.limits.Current = cl
		lv.limits.ConcurrencyDenominator = c.concurrencyDenominator(cl)
		lv.limits.Target, lv.limits.FairFrac = la.Target, a.FairFrac
		d := &lv.demand
		lv.limits.DemandAverage, lv.limits.DemandStdDev = d.Average, d.StdDev
		lv.limits.DemandHighWatermark, lv.limits.DemandSmoothed = float64(d.HighWatermark), d.Smoothed
		// The configuration was valid when the level was created and the
		// queuing parameters were validated by Compile, so this cannot fail.
		_ = lv.reconfigure(now, queueConfig(&lv.spec, cl, c.base))
		c.obs.LevelLimits(lv.name, lv.limits)
	}
	return own
}

// concurrencyDenominator is upstream's denominator of utilization metrics
// (a tenth of the total when the limit is 0).
func (c *Controller) concurrencyDenominator(current int) int {
	if current > 0 {
		return current
	}
	return max(1, int(math.Round(float64(c.total)/10)))
}

// queueCapacity is upstream's denominator of the waiting-requests ratio.
func queueCapacity(pl *flowschema.PriorityLevelConfiguration) int {
	qll, queues := 1, 0
	if l := pl.Spec.Limited; l != nil && l.LimitResponse.Queuing != nil {
		qll, queues = max(1, int(l.LimitResponse.Queuing.QueueLengthLimit)), int(l.LimitResponse.Queuing.Queues)
	}
	if queues > 0 {
		qll *= queues
	}
	return qll
}
