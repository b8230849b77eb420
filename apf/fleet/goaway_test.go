package fleet

import (
	"testing"

	"github.com/fairslice/fairslice/seats"
	"github.com/google/go-cmp/cmp"
)

func TestOverloaded(t *testing.T) {
	at := func(name string, cl int, demand float64) Summary {
		return Summary{Replica: name, Levels: []LevelDemand{{Name: gd, CurrentCL: cl, Demand: seats.SeatDemand{Average: demand}}}}
	}
	for _, c := range []struct {
		name  string
		own   Summary
		peers []Summary
		want  bool
	}{
		{"alone", at("r0", 10, 30), nil, false},
		{"busiest while a peer idles", at("r0", 10, 30), []Summary{at("r1", 10, 2), at("r2", 10, 10)}, true},
		{"busy but every peer full", at("r0", 10, 30), []Summary{at("r1", 10, 10), at("r2", 10, 12)}, false},
		{"a peer idles but not the busiest", at("r0", 10, 8), []Summary{at("r1", 10, 2), at("r2", 10, 30)}, false},
		{"no seats", at("r0", 0, 5), []Summary{at("r1", 10, 0)}, false},
	} {
		if got := Overloaded(c.own, c.peers); got != c.want {
			t.Errorf("%s: Overloaded = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMoveHelps: a move is worth it only if the flows left fill the level
// and a peer has the moved flow's seats idle.
func TestMoveHelps(t *testing.T) {
	at := func(name string, cl int, demand float64, flows ...FlowDemand) Summary {
		return Summary{Replica: name, Flows: flows,
			Levels: []LevelDemand{{Name: gd, CurrentCL: cl, Demand: seats.SeatDemand{Average: demand}}}}
	}
	heavy := FlowDemand{Level: gd, Flow: "heavy", Seats: 15, Demand: 300}
	other := FlowDemand{Level: gd, Flow: "other", Seats: 15, Demand: 290}
	light := FlowDemand{Level: gd, Flow: "light", Seats: 3, Demand: 3}
	idle, busy := at("r1", 33, 3), at("r2", 33, 300)
	for _, c := range []struct {
		name  string
		own   Summary
		peers []Summary
		want  bool
	}{
		{"two heavy flows, a peer idle", at("r0", 33, 600, heavy, other, light), []Summary{idle, busy}, true},
		{"the only heavy flow: the move swaps which replica idles", at("r0", 33, 303, heavy, light), []Summary{idle}, false},
		{"no peer has its seats idle", at("r0", 33, 600, heavy, other), []Summary{busy, at("r3", 33, 25)}, false},
		{"no peers", at("r0", 33, 600, heavy, other), nil, false},
	} {
		if got := MoveHelps(c.own, heavy, c.peers); got != c.want {
			t.Errorf("%s: MoveHelps(heavy) = %v, want %v", c.name, got, c.want)
		}
	}
	// A cap refuses at arrival: the level's statistics miss what the flows ask.
	capped := at("r0", 33, 30, heavy, other)
	if !Overloaded(capped, []Summary{idle}) {
		t.Errorf("Overloaded(level demand 30 of 33, flows asking 590) = false, want true")
	}
}

// TestAskedForCountsRefusedDemand: a level's published demand is at least
// what its flows asked for, refusals included, so that the fleet's level
// limits do not shrink with the caps.
func TestAskedForCountsRefusedDemand(t *testing.T) {
	s := Summary{
		Levels: []LevelDemand{{Name: gd, CurrentCL: 9, Demand: seats.SeatDemand{Average: 6, Smoothed: 7}},
			{Name: "workload-low", Demand: seats.SeatDemand{Average: 3, Smoothed: 3}}},
		Flows: []FlowDemand{{Level: gd, Flow: "heavy", Seats: 6, Demand: 40}, {Level: gd, Flow: "light", Seats: 1, Demand: 1},
			{Level: "workload-low", Flow: "batch", Seats: 1, Demand: 1}},
	}
	askedFor(&s)
	got := []seats.SeatDemand{s.Levels[0].Demand, s.Levels[1].Demand}
	want := []seats.SeatDemand{{Average: 41, Smoothed: 41}, {Average: 3, Smoothed: 3}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("askedFor: level demands (-want +got):\n%s", d)
	}
}
