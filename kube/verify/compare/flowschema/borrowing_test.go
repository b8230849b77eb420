package flowschemacompare

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

// goldenCase mirrors testdata/upstream_borrowing_test.go.txt's output.
type goldenCase struct {
	Server int `json:"server"`
	Levels []struct {
		Name      string `json:"name"`
		Exempt    bool   `json:"exempt"`
		Shares    int32  `json:"shares"`
		Lendable  int32  `json:"lendablePercent"`
		Borrowing *int32 `json:"borrowingLimitPercent"`
		HandSize  int32  `json:"handSize"`
	} `json:"levels"`
	Nominal, Min, Max, Start []int
	MaxSeats                 []uint64
	Rounds                   []struct {
		Demand []struct {
			Duration, Average, Deviation, Max float64
		} `json:"demand"`
		Current  []int     `json:"current"`
		Smoothed []float64 `json:"smoothed"`
	} `json:"rounds"`
}

// TestBorrowingGolden replays upstream's borrowing (static limits, the
// adjustment at configuration time, then rounds of demand through all
// three regimes) from testdata/borrowing.golden.json, which
// testdata/gen-borrowing.sh produces by running upstream's unexported code.
func TestBorrowingGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/borrowing.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	regimes := map[seats.BorrowingRegime]int{}
	rounds := 0
	for k, gc := range cases {
		var pls []flowschema.PriorityLevelConfiguration
		for _, lv := range gc.Levels {
			pl := flowschema.PriorityLevelConfiguration{ObjectMeta: flowschema.ObjectMeta{Name: lv.Name}}
			if lv.Exempt {
				pl.Spec = flowschema.PriorityLevelConfigurationSpec{Type: "Exempt", Exempt: &flowschema.ExemptPriorityLevelConfiguration{
					NominalConcurrencyShares: flowschema.Int32(lv.Shares), LendablePercent: flowschema.Int32(lv.Lendable)}}
			} else {
				lr := flowschema.LimitResponse{Type: "Reject"}
				if lv.HandSize > 0 {
					lr = flowschema.LimitResponse{Type: "Queue", Queuing: &flowschema.QueuingConfiguration{Queues: 64, HandSize: lv.HandSize, QueueLengthLimit: 50}}
				}
				pl.Spec = flowschema.PriorityLevelConfigurationSpec{Type: "Limited", Limited: &flowschema.LimitedPriorityLevelConfiguration{
					NominalConcurrencyShares: flowschema.Int32(lv.Shares), LendablePercent: flowschema.Int32(lv.Lendable),
					BorrowingLimitPercent: lv.Borrowing, LimitResponse: lr}}
			}
			pls = append(pls, pl)
		}
		limits, err := seats.ComputeLimits(gc.Server, pls)
		if err != nil {
			t.Fatalf("case %d: %v", k, err)
		}
		var nominal, minCL, maxCL []int
		var maxSeats []uint64
		levels := make([]seats.BorrowingLevel, len(limits))
		for i, l := range limits {
			nominal, minCL, maxCL = append(nominal, l.NominalCL), append(minCL, l.MinCL), append(maxCL, l.MaxCL)
			maxSeats = append(maxSeats, uint64(l.MaxSeats))
			levels[i] = seats.BorrowingLevel{Limits: l, CurrentCL: l.InitialCL}
		}
		if diff := cmp.Diff([][]int{gc.Nominal, gc.Min, gc.Max}, [][]int{nominal, minCL, maxCL}); diff != "" {
			t.Fatalf("case %d: static limits mismatch (-upstream +fairslice):\n%s", k, diff)
		}
		if diff := cmp.Diff(gc.MaxSeats, maxSeats); diff != "" {
			t.Fatalf("case %d: max seats mismatch (-upstream +fairslice):\n%s", k, diff)
		}
		apply := func(a seats.Allocation) []int {
			var cur []int
			for i := range levels {
				levels[i].CurrentCL = a.Levels[i].CurrentCL
				cur = append(cur, a.Levels[i].CurrentCL)
			}
			return cur
		}
		// The adjustment at configuration time sees an empty period.
		for i := range levels {
			levels[i].Demand.Update(fairqueue.DemandResults{})
		}
		if diff := cmp.Diff(gc.Start, apply(seats.Borrow(gc.Server, levels, seats.BorrowingOptions{}))); diff != "" {
			t.Fatalf("case %d: start limits mismatch (-upstream +fairslice):\n%s", k, diff)
		}
		for r, round := range gc.Rounds {
			var smoothed []float64
			for i := range levels {
				d := round.Demand[i]
				levels[i].Demand.Update(fairqueue.DemandResults{Duration: d.Duration, Average: d.Average, Deviation: d.Deviation, Max: d.Max})
				smoothed = append(smoothed, levels[i].Demand.Smoothed)
			}
			a := seats.Borrow(gc.Server, levels, seats.BorrowingOptions{})
			regimes[a.Regime]++
			rounds++
			if diff := cmp.Diff(round.Current, apply(a)); diff != "" {
				t.Fatalf("case %d round %d (%v regime): current limits mismatch (-upstream +fairslice):\n%s", k, r, a.Regime, diff)
			}
			if diff := cmp.Diff(round.Smoothed, smoothed, cmp.Comparer(func(x, y float64) bool { return x == y || math.Abs(x-y) < 1e-9 })); diff != "" {
				t.Fatalf("case %d round %d: smoothed demand mismatch (-upstream +fairslice):\n%s", k, r, diff)
			}
		}
	}
	t.Logf("%d cases, %d rounds, regimes %v", len(cases), rounds, regimes)
	for _, r := range []seats.BorrowingRegime{seats.RegimeMinimum, seats.RegimeShared, seats.RegimeFair} {
		if regimes[r] == 0 {
			t.Errorf("no round in the %v regime; the golden data does not cover it", r)
		}
	}
}
