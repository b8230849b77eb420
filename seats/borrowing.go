package seats

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// Constants of upstream's periodic concurrency adjustment.
const (
	// BorrowingPeriod is how often upstream re-divides concurrency.
	BorrowingPeriod = 10 * time.Second
	// SeatDemandSmoothing is the weight of the previous smoothed demand
	// (half-life about 30 periods).
	SeatDemandSmoothing = 0.977
	// MinAllocationTarget is the smallest target the fair allocation uses.
	MinAllocationTarget = 0.001
	allocEpsilon        = 1e-7
)

// SeatDemand is a level's seat-demand statistics across adjustment
// periods (upstream's seatDemandStats).
type SeatDemand struct {
	HighWatermark int     // round(max demand) of the last period
	Average       float64 // of the last period
	StdDev        float64 // of the last period
	Smoothed      float64 // max(envelope, 0.977·previous + 0.023·envelope)
}

// Update folds one period's results (fairqueue.DemandStats.Reset) into s:
// the high watermark always; the rest only when the period has a positive
// duration. A NaN deviation counts as 0, and the envelope is average +
// deviation.
func (s *SeatDemand) Update(r fairqueue.DemandResults) {
	s.HighWatermark = int(math.Round(r.Max))
	if r.Duration <= 0 {
		return
	}
	dev := r.Deviation
	if math.IsNaN(dev) {
		dev = 0
	}
	s.Average, s.StdDev = r.Average, dev
	envelope := r.Average + dev
	s.Smoothed = math.Max(envelope, SeatDemandSmoothing*s.Smoothed+(1-SeatDemandSmoothing)*envelope)
}

// BorrowingLevel is one level's input to an adjustment.
type BorrowingLevel struct {
	Limits LevelLimits
	// Demand is the level's statistics, already updated for this period.
	Demand SeatDemand
	// CurrentCL is the level's limit before this adjustment; it is kept if
	// the fair allocation fails.
	CurrentCL int
}

// BorrowingOptions selects deliberate departures from upstream.
type BorrowingOptions struct {
	// SubtractExemptUsage makes the fair allocation divide what the exempt
	// levels leave (Σ NominalCL − exempt usage) instead of all of
	// Σ NominalCL. Upstream divides the whole sum, so when exempt requests
	// use seats the limits add up to more than the server's total by the
	// exempt usage (see Allocation.Overcommit).
	SubtractExemptUsage bool
}

// BorrowingRegime says which of upstream's three cases an adjustment fell
// into.
type BorrowingRegime int

const (
	// RegimeMinimum: what exempt leaves is at most Σ MinCL; every
	// non-exempt level gets its MinCL.
	RegimeMinimum BorrowingRegime = iota
	// RegimeShared: it is at most Σ of the demand-raised lower bounds;
	// each level gets MinCL plus the same fraction of its raise.
	RegimeShared
	// RegimeFair: the fair allocation between lower and upper bounds.
	RegimeFair
)

// String names the regime: minimum, shared or fair.
func (r BorrowingRegime) String() string {
	switch r {
	case RegimeMinimum:
		return "minimum"
	case RegimeShared:
		return "shared"
	case RegimeFair:
		return "fair"
	}
	return fmt.Sprintf("BorrowingRegime(%d)", int(r))
}

// LevelAllocation is one level's outcome.
type LevelAllocation struct {
	Name   string
	Exempt bool
	// LowerBound is max(MinCL, min(NominalCL, high watermark)) for a
	// non-exempt level and max(MinCL, high watermark) for an exempt one.
	LowerBound int
	// UpperBound (MaxCL) and Target (max(LowerBound, smoothed demand)) are
	// the fair allocation's other inputs; zero for exempt levels.
	UpperBound int
	Target     float64
	// CurrentCL is the new concurrency limit.
	CurrentCL int
	// ConcurrencyDenominator is CurrentCL, or max(1, round(server/10)) if
	// that is 0 (the denominator of upstream's utilization gauges).
	ConcurrencyDenominator int
}

// Allocation is the outcome of one adjustment.
type Allocation struct {
	Levels       []LevelAllocation
	Regime       BorrowingRegime
	NominalCLSum int // Σ NominalCL over all levels
	// RemainingCL is NominalCLSum minus the exempt levels' lower bounds.
	RemainingCL int
	// FairFrac is the fair allocation's proportion (RegimeFair only).
	FairFrac float64
	// Err is set when the fair allocation failed; the non-exempt levels
	// then keep their CurrentCL, as upstream.
	Err error
}

// Total is Σ CurrentCL over all levels.
func (a Allocation) Total() int {
	t := 0
	for _, l := range a.Levels {
		t += l.CurrentCL
	}
	return t
}

// Overcommit is how far Total exceeds NominalCLSum (0 if it does not).
func (a Allocation) Overcommit() int { return max(0, a.Total()-a.NominalCLSum) }

// Borrow performs one periodic adjustment (upstream's
// updateBorrowingLocked) for a server concurrency limit and every level.
// It is pure: the caller keeps SeatDemand between periods and feeds back
// CurrentCL.
func Borrow(serverConcurrency int, levels []BorrowingLevel, opts BorrowingOptions) Allocation {
	a := Allocation{Levels: make([]LevelAllocation, len(levels))}
	for _, l := range levels {
		a.NominalCLSum += l.Limits.NominalCL
	}
	a.RemainingCL = a.NominalCLSum
	var items []AllocationItem
	var itemLevel []int
	var minCLSum, lowerSum int
	for i, l := range levels {
		la := &a.Levels[i]
		la.Name, la.Exempt = l.Limits.Name, l.Limits.Exempt
		if l.Limits.Exempt {
			la.LowerBound = max(l.Limits.MinCL, l.Demand.HighWatermark)
			la.CurrentCL = la.LowerBound
			a.RemainingCL -= la.LowerBound
			continue
		}
		la.LowerBound = max(l.Limits.MinCL, min(l.Limits.NominalCL, l.Demand.HighWatermark))
		la.UpperBound = l.Limits.MaxCL
		la.Target = math.Max(float64(la.LowerBound), l.Demand.Smoothed)
		items = append(items, AllocationItem{LowerBound: float64(la.LowerBound), UpperBound: float64(la.UpperBound), Target: la.Target})
		itemLevel = append(itemLevel, i)
		minCLSum += l.Limits.MinCL
		lowerSum += la.LowerBound
	}
	switch {
	case a.RemainingCL <= minCLSum:
		a.Regime = RegimeMinimum
		for _, i := range itemLevel {
			a.Levels[i].CurrentCL = levels[i].Limits.MinCL
		}
	case a.RemainingCL <= lowerSum:
		a.Regime = RegimeShared
		frac := float64(a.RemainingCL-minCLSum) / float64(lowerSum-minCLSum)
		for _, i := range itemLevel {
			minCL := levels[i].Limits.MinCL
			a.Levels[i].CurrentCL = minCL + int(math.Round(float64(a.Levels[i].LowerBound-minCL)*frac))
		}
	default:
		a.Regime = RegimeFair
		required := a.NominalCLSum
		if opts.SubtractExemptUsage {
			required = a.RemainingCL
		}
		allocs, frac, err := FairAllocation(required, items)
		a.FairFrac, a.Err = frac, err
		for k, i := range itemLevel {
			if err != nil {
				a.Levels[i].CurrentCL = levels[i].CurrentCL
			} else {
				a.Levels[i].CurrentCL = int(math.Round(allocs[k]))
			}
		}
	}
	for i := range a.Levels {
		la := &a.Levels[i]
		la.ConcurrencyDenominator = la.CurrentCL
		if la.CurrentCL <= 0 {
			la.ConcurrencyDenominator = int(math.Max(1, math.Round(float64(serverConcurrency)/10)))
		}
	}
	return a
}

// AllocationItem is one class of the fair allocation problem.
type AllocationItem struct {
	Target     float64
	LowerBound float64
	UpperBound float64
}

// FairAllocation divides requiredSum among items in proportion to their
// targets, each clamped to its bounds: it finds the proportion p with
// Σ clamp(p·target, lower, upper) = requiredSum and returns the clamped
// values and p (upstream's computeConcurrencyAllocation). Targets below
// MinAllocationTarget count as MinAllocationTarget. It fails on a negative
// sum or lower bound, a target below its lower bound, an upper bound below
// its lower bound, or bounds that cannot reach requiredSum. O(n log n).
func FairAllocation(requiredSum int, items []AllocationItem) ([]float64, float64, error) {
	if requiredSum < 0 {
		return nil, 0, errors.New("seats: negative required sum")
	}
	req := float64(requiredSum)
	rel, st, err := relativeBounds(items)
	if err != nil {
		return nil, 0, err
	}
	if err := st.check(req, requiredSum); err != nil {
		return nil, 0, err
	}
	out := make([]float64, len(items))
	if requiredSum == 0 {
		return out, 0, nil
	}
	if st.lowSum-req > -allocEpsilon {
		for i, it := range items {
			out[i] = it.LowerBound
		}
		return out, st.relLo, nil
	}
	if req-st.highSum > -allocEpsilon {
		for i, it := range items {
			out[i] = it.UpperBound
		}
		return out, st.relHiMax, nil
	}
	prop := req / st.targetSum
	if st.relLoMax <= prop && prop <= st.relHi {
		for i := range items {
			out[i] = rel[i].target * prop
		}
		return out, prop, nil
	}
	prop, err = sweepProportion(rel, req, st)
	if err != nil {
		return nil, 0, err
	}
	for i, it := range items {
		out[i] = math.Max(it.LowerBound, math.Min(it.UpperBound, prop*rel[i].target))
	}
	return out, prop, nil
}

// allocationStats are the sums and extremes of FairAllocation's items.
type allocationStats struct {
	lowSum, highSum, targetSum float64
	relLo, relHi               float64 // minima of the relative bounds
	relLoMax, relHiMax         float64 // maxima of the relative bounds
}

// relativeBounds validates items and returns each one's target (raised to
// MinAllocationTarget) and bounds relative to it, with their sums and
// extremes.
func relativeBounds(items []AllocationItem) ([]relItem, allocationStats, error) {
	st := allocationStats{relLo: math.MaxFloat32, relHi: math.MaxFloat32}
	rel := make([]relItem, len(items))
	for i, it := range items {
		switch {
		case it.LowerBound < 0:
			return nil, st, fmt.Errorf("seats: item %d: lower bound %v is negative", i, it.LowerBound)
		case it.Target < it.LowerBound:
			return nil, st, fmt.Errorf("seats: item %d: target %v is below its lower bound %v", i, it.Target, it.LowerBound)
		case it.UpperBound < it.LowerBound:
			return nil, st, fmt.Errorf("seats: item %d: upper bound %v is below its lower bound %v", i, it.UpperBound, it.LowerBound)
		}
		t := max(it.Target, MinAllocationTarget)
		st.lowSum += it.LowerBound
		st.highSum += it.UpperBound
		st.targetSum += t
		rel[i] = relItem{target: t, lo: it.LowerBound / t, hi: it.UpperBound / t}
		st.relLo, st.relLoMax = math.Min(st.relLo, rel[i].lo), math.Max(st.relLoMax, rel[i].lo)
		st.relHi, st.relHiMax = math.Min(st.relHi, rel[i].hi), math.Max(st.relHiMax, rel[i].hi)
	}
	return rel, st, nil
}

// check reports bounds that cannot reach the required sum req.
func (st *allocationStats) check(req float64, requiredSum int) error {
	switch {
	case st.relLoMax > 1:
		return fmt.Errorf("seats: a relative lower bound exceeds 1 by %v", st.relLoMax-1)
	case st.lowSum-req > allocEpsilon:
		return fmt.Errorf("seats: lower bounds sum to %v, above the required sum %d", st.lowSum, requiredSum)
	case req-st.highSum > allocEpsilon:
		return fmt.Errorf("seats: upper bounds sum to %v, below the required sum %d", st.highSum, requiredSum)
	}
	return nil
}

// sweepProportion finds the proportion whose clamped values sum to req by
// sweeping it upward through the sorted relative bounds, tracking the
// items strictly between their bounds (whose value grows with the
// proportion).
func sweepProportion(rel []relItem, req float64, st allocationStats) (float64, error) {
	bounds := &boundOrder{items: rel, order: make([]int, 2*len(rel))}
	for i := range bounds.order {
		bounds.order[i] = i
	}
	sort.Sort(bounds)
	sum := st.lowSum
	prop := st.relLo
	var activeTargets, pendingTargets float64
	var active, pending int
	next := 0
	for sum < req {
		var bound float64
		for {
			activeTargets += pendingTargets
			active += pending
			if next >= len(bounds.order) {
				return 0, errors.New("seats: fair allocation ran out of bounds")
			}
			var item int
			var isLower bool
			bound, item, isLower = bounds.at(next)
			if isLower {
				pending, pendingTargets = 1, rel[item].target
			} else {
				pending, pendingTargets = -1, -rel[item].target
			}
			next++
			if bound > prop {
				break
			}
		}
		if active == 0 {
			prop = bound
			continue
		}
		candidate := prop + (req-sum)/activeTargets
		if candidate <= bound {
			prop = candidate
			break
		}
		sum += (bound - prop) * activeTargets
		prop = bound
	}
	return prop, nil
}

type relItem struct{ target, lo, hi float64 }

// boundOrder sorts the 2n relative bounds (2i is item i's lower, 2i+1 its
// upper) ascending.
type boundOrder struct {
	items []relItem
	order []int
}

func (b *boundOrder) at(k int) (bound float64, item int, isLower bool) {
	p := b.order[k]
	item, isLower = p/2, p%2 == 0
	if isLower {
		return b.items[item].lo, item, true
	}
	return b.items[item].hi, item, false
}

func (b *boundOrder) Len() int { return len(b.order) }
func (b *boundOrder) Less(i, j int) bool {
	x, _, _ := b.at(i)
	y, _, _ := b.at(j)
	return x < y
}
func (b *boundOrder) Swap(i, j int) { b.order[i], b.order[j] = b.order[j], b.order[i] }
