package seats

import (
	"math"

	"github.com/fairslice/fairslice/flowschema"
)

// LevelState is what a server knows of one priority level when it plans
// its seats.
type LevelState struct {
	// Config is the level's configuration (its shares and queuing).
	Config flowschema.PriorityLevelConfiguration
	// Demand is the level's seat-demand statistics, already updated for
	// the period just ended (SeatDemand.Update).
	Demand SeatDemand
	// Current is the level's current limit in force; a new level has none
	// yet (see New).
	Current int
	// New marks a level that has not been planned before: the borrowing
	// starts it from its InitialCL, as upstream's new levels start.
	New bool
	// Previous are the level's static limits of the last plan, kept when
	// the shares cannot be divided (only objects no validation let
	// through, such as negative shares, get there).
	Previous LevelLimits
}

// Input is everything one seat plan depends on.
type Input struct {
	// Total is the seats divided among the levels: the server's
	// concurrency limit, or what an adaptive rule decided.
	Total int
	// Levels are every level the server has, quiescing ones included (all
	// shares count), in a fixed order (the plan's order).
	Levels []LevelState
	// Borrowing selects departures from upstream's borrowing.
	Borrowing BorrowingOptions
	// Overrides are current limits decided beyond the borrowing (for
	// example by a fleet of replicas), by level name. Each is kept within
	// its level's [MinCL, MaxCL]; exempt levels and names of no level are
	// ignored. nil: the borrowing decides every level, as upstream.
	Overrides map[string]int
}

// LevelPlan is one level's seats in a plan.
type LevelPlan struct {
	// Limits are the static limits from the level's shares of the total.
	Limits LevelLimits
	// Allocation is the borrowing's outcome for the level; its CurrentCL
	// is the limit the borrowing alone would set.
	Allocation LevelAllocation
	// Current is the limit to put in force: Allocation.CurrentCL, or the
	// level's override within its bounds.
	Current int
	// Overridden reports that Current came from Input.Overrides.
	Overridden bool
	// ConcurrencyDenominator is Current, or max(1, round(total/10)) when
	// that is 0: the denominator of upstream's utilization gauges.
	ConcurrencyDenominator int
}

// Plan is the seats of every level, in Input.Levels' order.
type Plan struct {
	Total  int
	Levels []LevelPlan
	// Regime and FairFrac are the borrowing's (see Allocation).
	Regime   BorrowingRegime
	FairFrac float64
	// Err is set when the shares could not be divided (the levels kept
	// their Previous static limits) or the fair allocation failed (the
	// levels kept their Current); the plan is still complete.
	Err error
}

// Compute returns the seat plan for in: each level's static limits from
// its shares of in.Total (ComputeLimits; Previous where that fails), new
// levels from their InitialCL, the borrowing adjustment
// (Borrow) over every level, and then in.Overrides within each level's
// bounds. It is pure and O(levels · log levels).
func Compute(in Input) Plan {
	p := Plan{Total: in.Total, Levels: make([]LevelPlan, len(in.Levels))}
	configs := make([]flowschema.PriorityLevelConfiguration, len(in.Levels))
	for i := range in.Levels {
		configs[i] = in.Levels[i].Config
	}
	static, err := ComputeLimits(in.Total, configs)
	if err != nil {
		p.Err = err
	}
	borrowing := make([]BorrowingLevel, len(in.Levels))
	for i, l := range in.Levels {
		lp := &p.Levels[i]
		lp.Limits = l.Previous
		if static != nil {
			lp.Limits = static[i]
		}
		current := l.Current
		if l.New {
			current = lp.Limits.InitialCL
		}
		borrowing[i] = BorrowingLevel{Limits: lp.Limits, Demand: l.Demand, CurrentCL: current}
	}
	a := Borrow(in.Total, borrowing, in.Borrowing)
	p.Regime, p.FairFrac = a.Regime, a.FairFrac
	if p.Err == nil {
		p.Err = a.Err
	}
	for i := range p.Levels {
		lp := &p.Levels[i]
		lp.Allocation = a.Levels[i]
		lp.Current = lp.Allocation.CurrentCL
		if o, ok := in.Overrides[lp.Limits.Name]; ok && !lp.Limits.Exempt {
			lp.Current, lp.Overridden = min(max(o, lp.Limits.MinCL), lp.Limits.MaxCL), true
		}
		lp.ConcurrencyDenominator = Denominator(lp.Current, in.Total)
	}
	return p
}

// Denominator is upstream's denominator of a level's utilization gauges:
// its current limit, or when that is 0 a tenth of the total (at least 1).
func Denominator(current, total int) int {
	if current > 0 {
		return current
	}
	return max(1, int(math.Round(float64(total)/10)))
}
