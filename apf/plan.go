package apf

import (
	"time"

	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

// SeatPolicy decides, beyond upstream, the current limits of some priority
// levels in place of the borrowing's (package apf/fleet's Coordinator
// decides them for a fleet of replicas). The controller asks it in every
// seat plan it makes (see the package doc, "Where seats are decided"):
// the levels CurrentLimits names get those limits, each within its Lower
// and Upper bounds (exempt levels and unknown names are ignored); the
// others keep the borrowing's. nil or an empty map leaves every level to
// the borrowing.
//
// CurrentLimits is called with the controller's lock held, from whichever
// goroutine plans (the periodic adjustment, a configuration change, an
// adaptive revision, Replan): it must be quick, safe for concurrent use,
// and must not call the Controller. A policy that changes its mind calls
// Controller.Replan to have it applied before the next adjustment.
type SeatPolicy interface {
	CurrentLimits(now time.Time) map[string]int
}

// planLocked is the one place where the levels' seats change: it reads
// the levels' state (folding each level's demand of the period just ended
// first when fold is set: the periodic adjustment), asks the policies
// (the total: Options.ServerConcurrencyLimit or the adaptive total; the
// overrides: Options.SeatPolicy), computes the plan (seats.Compute, pure)
// and applies it (applyLocked). Levels in created are new in this
// configuration. Called with c.mu held.
func (c *Controller) planLocked(now time.Time, fold bool, created []*level) {
	levels := c.sortedLevels()
	in := seats.Input{Total: c.serverCL, Borrowing: c.borrow, Levels: make([]seats.LevelState, len(levels))}
	if c.adapt != nil {
		in.Total = c.adapt.total
	}
	for i, lv := range levels {
		if fold {
			lv.mu.Lock()
			res := lv.qs.ResetDemand(now)
			lv.mu.Unlock()
			lv.demand.Update(res)
		}
		in.Levels[i] = seats.LevelState{Config: lv.spec, Demand: lv.demand, Current: lv.limits.Current, Previous: lv.static}
	}
	for _, lv := range created {
		for i := range levels {
			if levels[i] == lv {
				in.Levels[i].New = true
			}
		}
	}
	if c.policy != nil {
		in.Overrides = c.policy.CurrentLimits(now)
	}
	c.applyLocked(now, levels, seats.Compute(in))
}

// applyLocked puts plan p, made for levels in that order, in force: the
// total, each level's limits and its queue set's concurrency limit, and
// tells the Observer. Called with c.mu held, only by planLocked.
func (c *Controller) applyLocked(now time.Time, levels []*level, p seats.Plan) {
	c.total = p.Total
	for i, lv := range levels {
		lp := &p.Levels[i]
		lv.static = lp.Limits
		lv.limits = limitsOf(&lv.spec, lp, p.FairFrac, lv.demand)
		lv.maxSeats.Store(uint64(lp.Limits.MaxSeats))
		// The configuration was valid when the level was created and the
		// queuing parameters were validated by Compile, so this cannot fail.
		_ = lv.reconfigure(now, queueConfig(&lv.spec, lp.Current, c.base))
		c.obs.LevelLimits(lv.name, lv.limits)
	}
}

// limitsOf is the Limits a level reports for its part of a plan.
func limitsOf(spec *flowschema.PriorityLevelConfiguration, lp *seats.LevelPlan, fairFrac float64, d seats.SeatDemand) Limits {
	l := lp.Limits
	out := Limits{
		Nominal: l.NominalCL, Lendable: l.LendableCL, Borrowing: l.BorrowingCL,
		Lower: l.MinCL, Upper: l.MaxCL, MaxSeats: uint64(l.MaxSeats),
		Current: lp.Current, Borrowed: lp.Allocation.CurrentCL,
		Target: lp.Allocation.Target, FairFrac: fairFrac,
		ConcurrencyDenominator: lp.ConcurrencyDenominator,
		QueueCapacity:          queueCapacity(spec),
		DemandAverage:          d.Average, DemandStdDev: d.StdDev,
		DemandHighWatermark: float64(d.HighWatermark), DemandSmoothed: d.Smoothed,
	}
	if q := spec.Spec.Limited; q != nil && q.LimitResponse.Queuing != nil {
		out.Queues, out.QueueLengthLimit = int(q.LimitResponse.Queuing.Queues), int(q.LimitResponse.Queuing.QueueLengthLimit)
	}
	return out
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
