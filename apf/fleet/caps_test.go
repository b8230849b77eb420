package fleet

import (
	"fmt"
	"testing"

	"github.com/fairslice/fairslice/seats"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const gd = "global-default"

// replicaSummary is a replica with c seats of global-default and the
// given flow demands (name → seats).
func replicaSummary(name string, c int, flows map[string]float64) Summary {
	s := Summary{Replica: name, ServerConcurrencyLimit: 2 * c, Levels: []LevelDemand{{Name: gd, CurrentCL: c}}}
	for f, d := range flows {
		s.Flows = append(s.Flows, FlowDemand{Level: gd, Flow: f, Seats: d / 2, Demand: d})
	}
	return s
}

// TestFlowCapsSpreadAndPinned: one spread and N pinned flows, all heavy.
// The plan gives each pinned flow its fair share on its replica and the
// spread flow the rest, so the spread flow's cap on each replica is C −
// fair share, where fair share is N·C/(N+1).
func TestFlowCapsSpreadAndPinned(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		const c = 30
		var all []Summary
		for r := range n {
			all = append(all, replicaSummary(fmt.Sprint("r", r), c, map[string]float64{"spread": 100, fmt.Sprint("pinned-", r): 100}))
		}
		fair := float64(n*c) / float64(n+1)
		for r := range n {
			peers := append(append([]Summary(nil), all[:r]...), all[r+1:]...)
			got := FlowCaps(gd, all[r], peers)
			want := map[string]float64{"spread": c - fair, fmt.Sprint("pinned-", r): fair}
			if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
				t.Errorf("N=%d: FlowCaps on r%d (-want +got):\n%s", n, r, d)
			}
		}
	}
}

// TestFlowCapsAlone: with no peers nothing is capped (today's decision).
func TestFlowCapsAlone(t *testing.T) {
	if got := FlowCaps(gd, replicaSummary("r0", 30, map[string]float64{"a": 100, "b": 100}), nil); got != nil {
		t.Errorf("FlowCaps alone = %v, want nil", got)
	}
}

// TestFlowCapsLeavesLightFlows: a flow asking for less than its share is
// not capped; a heavy one is capped to what the others leave.
func TestFlowCapsLeavesLightFlows(t *testing.T) {
	a := replicaSummary("a", 30, map[string]float64{"light": 4, "heavy": 100})
	b := replicaSummary("b", 30, map[string]float64{"light": 4, "heavy": 100})
	got := FlowCaps(gd, a, []Summary{b})
	if d := cmp.Diff(map[string]float64{"heavy": 26}, got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
		t.Errorf("FlowCaps (-want +got):\n%s", d)
	}
}

func TestLevelLimits(t *testing.T) {
	lim := func(name string, nominal, lendable int) seats.LevelLimits {
		return seats.LevelLimits{Name: name, NominalCL: nominal, LendableCL: lendable, BorrowingCL: 100,
			MinCL: nominal - lendable, MaxCL: nominal + 100, InitialCL: nominal - lendable/2}
	}
	summary := func(name string, busyA, busyB float64) Summary {
		return Summary{Replica: name, ServerConcurrencyLimit: 100, Levels: []LevelDemand{
			{Name: "a", Limits: lim("a", 50, 25), Demand: seats.SeatDemand{Average: busyA, Smoothed: busyA}, CurrentCL: 50},
			{Name: "b", Limits: lim("b", 50, 25), Demand: seats.SeatDemand{Average: busyB, Smoothed: busyB}, CurrentCL: 50},
		}}
	}
	if got := LevelLimits(summary("r0", 10, 10), nil, seats.BorrowingOptions{}); got != nil {
		t.Errorf("LevelLimits alone = %v, want nil", got)
	}
	// r0's demand is all at level a, r1's all at b: each replica gives
	// its busy level more than nominal, within its bounds and its server.
	r0, r1 := summary("r0", 90, 0), summary("r1", 0, 90)
	for _, c := range []struct {
		own, peer Summary
		busy      string
	}{{r0, r1, "a"}, {r1, r0, "b"}} {
		got := LevelLimits(c.own, []Summary{c.peer}, seats.BorrowingOptions{})
		total := 0
		for name, cl := range got {
			total += cl
			if cl < 25 || cl > 150 {
				t.Errorf("%s: level %s limit %d outside [25, 150]", c.own.Replica, name, cl)
			}
		}
		if got[c.busy] <= 50 || total > 100 {
			t.Errorf("%s: LevelLimits = %v; want more than 50 for %s and at most 100 in all", c.own.Replica, got, c.busy)
		}
	}
}

// TestLevelLimitsUseNominalSeats: a replica's levels may add up to the
// seats its own borrowing divides, the sum of their nominal limits (14
// here, rounded up from a server limit of 12), not to the server limit:
// three equal replicas whose demand is all at level busy each give busy
// its nominal 9 plus all idle lends, 12, as upstream's borrowing alone
// would, and idle its lower bound.
func TestLevelLimitsUseNominalSeats(t *testing.T) {
	replica := func(name string) Summary {
		return Summary{Replica: name, ServerConcurrencyLimit: 12, Levels: []LevelDemand{
			{Name: "busy", CurrentCL: 12, Limits: seats.LevelLimits{Name: "busy", NominalCL: 9, LendableCL: 4, BorrowingCL: 9, MinCL: 5, MaxCL: 18, InitialCL: 9},
				Demand: seats.SeatDemand{Average: 40, Smoothed: 40, HighWatermark: 40}},
			{Name: "idle", CurrentCL: 2, Limits: seats.LevelLimits{Name: "idle", NominalCL: 5, LendableCL: 3, MinCL: 2, MaxCL: 5, InitialCL: 5}},
		}}
	}
	got := LevelLimits(replica("r0"), []Summary{replica("r1"), replica("r2")}, seats.BorrowingOptions{})
	if d := cmp.Diff(map[string]int{"busy": 12, "idle": 2}, got); d != "" {
		t.Errorf("LevelLimits (-want +got):\n%s", d)
	}
}

// TestFlowCapsPinnedToOneReplica: two flows pinned to r0 share it, so the
// spread flow is planned on the other replicas only.
func TestFlowCapsPinnedToOneReplica(t *testing.T) {
	r0 := replicaSummary("r0", 30, map[string]float64{"spread": 40, "p1": 100, "p2": 100})
	r1 := replicaSummary("r1", 30, map[string]float64{"spread": 30})
	r2 := replicaSummary("r2", 30, map[string]float64{"spread": 30})
	for _, c := range []struct {
		own   Summary
		peers []Summary
		want  map[string]float64
	}{
		{r0, []Summary{r1, r2}, map[string]float64{"spread": 0, "p1": 15, "p2": 15}},
		{r1, []Summary{r0, r2}, map[string]float64{"spread": 30}},
	} {
		got := FlowCaps(gd, c.own, c.peers)
		if d := cmp.Diff(c.want, got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
			t.Errorf("FlowCaps on %s (-want +got):\n%s", c.own.Replica, d)
		}
	}
}
