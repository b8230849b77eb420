package seats

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

func TestDefaultLimitsAt600(t *testing.T) {
	c, err := flowschema.Compile(flowschema.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	got, err := ComputeLimits(600, c.PriorityLevels())
	if err != nil {
		t.Fatal(err)
	}
	// Shares sum to 245; nominal = ceil(600·shares/245).
	type row struct {
		name                          string
		nominal, lendable, min, seats int
	}
	want := []row{
		{"catch-all", 13, 0, 13, 0},
		{"exempt", 0, 0, 0, 0},
		{"system", 74, 24, 50, 12},
		{"node-high", 98, 25, 73, 15},
		{"leader-election", 25, 0, 25, 4},
		{"workload-high", 98, 49, 49, 15},
		{"workload-low", 245, 221, 24, 37},
		{"global-default", 49, 25, 24, 8},
	}
	var rows []row
	for _, l := range got {
		rows = append(rows, row{l.Name, l.NominalCL, l.LendableCL, l.MinCL, l.MaxSeats})
		if l.BorrowingCL != 600 || l.MaxCL != l.NominalCL+600 {
			t.Errorf("%s: BorrowingCL %d MaxCL %d, want 600 and nominal+600", l.Name, l.BorrowingCL, l.MaxCL)
		}
	}
	if diff := cmp.Diff(want, rows, cmp.AllowUnexported(row{})); diff != "" {
		t.Errorf("Limits(600) mismatch (-want +got):\n%s", diff)
	}
}

func TestMaxSeats(t *testing.T) {
	for _, tt := range []struct{ nominal, hand, want int }{
		{0, 8, 1}, {1, 8, 1}, {7, 6, 1}, {12, 6, 2}, {49, 6, 8}, {245, 6, 37}, {100, 1, 15}, {600, 0, 90},
		// Hand sizes beyond int32 once divided by their low 32 bits (0).
		{10, 1 << 32, 1}, {600, 1<<32 + 6, 1},
		// A negative hand size (queues 0, not defaulted) divides as
		// upstream's int32 arithmetic does, to a negative number.
		{600, -1, 1}, {100, -20, 1},
	} {
		if got := MaxSeats(tt.nominal, tt.hand); got != tt.want {
			t.Errorf("MaxSeats(%d, %d) = %d, want %d", tt.nominal, tt.hand, got, tt.want)
		}
	}
}

func TestSeatDemandUpdate(t *testing.T) {
	var s SeatDemand
	s.Update(fairqueue.DemandResults{Duration: 10, Average: 4, Deviation: 1, Max: 6.5})
	if s.HighWatermark != 7 || s.Smoothed != 5 {
		t.Errorf("after first period: %+v, want watermark 7 and smoothed 5", s)
	}
	s.Update(fairqueue.DemandResults{Duration: 10, Average: 0, Deviation: math.NaN(), Max: 0})
	if want := 0.977 * 5; math.Abs(s.Smoothed-want) > 1e-12 || s.StdDev != 0 {
		t.Errorf("after idle period: %+v, want smoothed %v", s, want)
	}
	s.Update(fairqueue.DemandResults{Duration: 0, Max: 3})
	if s.HighWatermark != 3 || math.Abs(s.Smoothed-0.977*5) > 1e-12 {
		t.Errorf("after empty period: %+v, want watermark 3, smoothed unchanged", s)
	}
}

func TestFairAllocation(t *testing.T) {
	tests := []struct {
		name     string
		required int
		items    []AllocationItem
		want     []float64
		wantErr  bool
	}{
		{"no bounds active", 10, []AllocationItem{{Target: 1, UpperBound: 100}, {Target: 4, UpperBound: 100}}, []float64{2, 8}, false},
		{"upper bound", 10, []AllocationItem{{Target: 1, UpperBound: 100}, {Target: 9, UpperBound: 3}}, []float64{7, 3}, false},
		{"lower bound", 10, []AllocationItem{{Target: 6, LowerBound: 6, UpperBound: 100}, {Target: 6, UpperBound: 100}}, []float64{6, 4}, false},
		{"all at lower", 5, []AllocationItem{{Target: 3, LowerBound: 3, UpperBound: 9}, {Target: 2, LowerBound: 2, UpperBound: 9}}, []float64{3, 2}, false},
		{"all at upper", 6, []AllocationItem{{Target: 9, LowerBound: 1, UpperBound: 3}, {Target: 9, LowerBound: 1, UpperBound: 3}}, []float64{3, 3}, false},
		{"zero", 0, []AllocationItem{{Target: 9, UpperBound: 3}}, []float64{0}, false},
		{"unreachable", 10, []AllocationItem{{Target: 1, UpperBound: 3}}, nil, true},
		{"too low", 1, []AllocationItem{{Target: 3, LowerBound: 3, UpperBound: 3}}, nil, true},
		{"target below lower", 5, []AllocationItem{{Target: 1, LowerBound: 3, UpperBound: 9}}, nil, true},
	}
	for _, tt := range tests {
		got, _, err := FairAllocation(tt.required, tt.items)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: FairAllocation error %v, want error %v", tt.name, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
			t.Errorf("%s: FairAllocation mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestBorrowExemptOvercommit shows upstream's treatment of exempt demand:
// the non-exempt levels still share all of Σ NominalCL, so the limits add
// up to more than the server has; SubtractExemptUsage removes the excess.
func TestBorrowExemptOvercommit(t *testing.T) {
	c, err := flowschema.Compile(flowschema.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	limits, err := ComputeLimits(600, c.PriorityLevels())
	if err != nil {
		t.Fatal(err)
	}
	levels := make([]BorrowingLevel, len(limits))
	for i, l := range limits {
		levels[i] = BorrowingLevel{Limits: l, CurrentCL: l.InitialCL}
		if l.Exempt {
			levels[i].Demand.Update(fairqueue.DemandResults{Duration: 10, Average: 80, Max: 100})
		}
	}
	up := Borrow(600, levels, BorrowingOptions{})
	fixed := Borrow(600, levels, BorrowingOptions{SubtractExemptUsage: true})
	if up.Regime != RegimeFair || fixed.Regime != RegimeFair {
		t.Fatalf("regimes %v and %v, want fair", up.Regime, fixed.Regime)
	}
	if up.NominalCLSum != 602 || up.Overcommit() < 99 {
		t.Errorf("upstream: Σnominal %d, total %d, overcommit %d; want 602, about 702, at least 99 (rounding)", up.NominalCLSum, up.Total(), up.Overcommit())
	}
	if fixed.Overcommit() > 1 {
		t.Errorf("SubtractExemptUsage: total %d, overcommit %d; want at most 1 (rounding)", fixed.Total(), fixed.Overcommit())
	}
}

// TestComputeLimitsAsStored: a level as a fake clientset stores it (no
// type in its limitResponse, queues 0, a hand of 20; no API server
// defaulted it) has max seats max(1, min(ceil(0.15·100), 100/20)) = 5 at a
// server limit of 100, and a Reject level none, as upstream computes them.
func TestComputeLimitsAsStored(t *testing.T) {
	limited := func(name string, shares int32, lr flowschema.LimitResponse) flowschema.PriorityLevelConfiguration {
		pl := flowschema.PriorityLevelConfiguration{Spec: flowschema.PriorityLevelConfigurationSpec{Type: flowschema.PriorityLevelTypeLimited,
			Limited: &flowschema.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares, LimitResponse: lr}}}
		pl.Name = name
		return pl
	}
	levels := []flowschema.PriorityLevelConfiguration{
		limited("p", 10000, flowschema.LimitResponse{Queuing: &flowschema.QueuingConfiguration{HandSize: 20}}),
		limited("other", 5, flowschema.LimitResponse{Type: flowschema.LimitResponseReject}),
	}
	lims, err := ComputeLimits(100, levels)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, l := range lims {
		got[l.Name] = l.MaxSeats
	}
	if diff := cmp.Diff(map[string]int{"p": 5, "other": 0}, got); diff != "" {
		t.Errorf("ComputeLimits(100, as stored) max seats mismatch (-want +got):\n%s", diff)
	}
}
