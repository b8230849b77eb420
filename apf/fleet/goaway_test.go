package fleet

import (
	"testing"

	"github.com/fairslice/fairslice/seats"
	"github.com/google/go-cmp/cmp"
)

// steerAt is replica name's summary: global-default with server seats
// (nominal, no other level to lend), a seat demand, and flows.
func steerAt(name string, seats int, demand float64, flows ...FlowDemand) Summary {
	return Summary{Replica: name, Flows: flows, Levels: []LevelDemand{{
		Name: gd, CurrentCL: seats, Demand: seatsDemand(demand),
		Limits: seatsLimits(seats),
	}}}
}

func seatsDemand(d float64) seats.SeatDemand { return seats.SeatDemand{Average: d, Smoothed: d} }

func seatsLimits(n int) seats.LevelLimits {
	return seats.LevelLimits{Name: gd, NominalCL: n, MinCL: n, MaxCL: n}
}

func flowAt(name string, held, asked float64) FlowDemand {
	return FlowDemand{Level: gd, Flow: name, Seats: held, Demand: asked}
}

func steeredNames(own Summary, peers []Summary) []string {
	var names []string
	for _, f := range Steered(own, peers) {
		names = append(names, f.Flow)
	}
	return names
}

// TestSteered: a flow is moved when it waits here and either a peer is
// under half as pressed, or it holds under its fleet fair share and some
// replica lacks it; a flow that gets what it asks for never is.
func TestSteered(t *testing.T) {
	heavy, other := flowAt("heavy", 15, 300), flowAt("other", 15, 290)
	light := flowAt("light", 3, 3)
	busyOwn := steerAt("r0", 33, 593, heavy, other, light)
	for _, c := range []struct {
		name  string
		own   Summary
		peers []Summary
		want  []string
	}{
		{"alone", busyOwn, nil, nil},
		{"a peer idles: every waiting flow", busyOwn, []Summary{steerAt("r1", 33, 3, light)}, []string{"heavy", "other"}},
		{"sorted by name", steerAt("r0", 33, 593, other, heavy, light), []Summary{steerAt("r1", 33, 3, light)}, []string{"heavy", "other"}},
		{"the peers as busy with the same flows", busyOwn,
			[]Summary{steerAt("r1", 33, 593, heavy, other, light), steerAt("r2", 33, 593, heavy, other, light)}, nil},
		{"the peers as busy, one without heavy, which holds under its share", steerAt("r0", 33, 593, flowAt("heavy", 10, 300), other, light),
			[]Summary{steerAt("r1", 33, 593, flowAt("heavy", 10, 300), other, light), steerAt("r2", 33, 593, other, flowAt("third", 30, 300))}, []string{"heavy"}},
		{"a peer reports heavy at another level only", steerAt("r0", 33, 593, flowAt("heavy", 10, 300), other, light),
			[]Summary{steerAt("r1", 33, 593, FlowDemand{Level: "workload-low", Flow: "heavy", Seats: 10, Demand: 300}, other, flowAt("third", 30, 300))}, []string{"heavy"}},
		{"a peer reports heavy asking for nothing (it left)", steerAt("r0", 33, 593, flowAt("heavy", 10, 300), other, light),
			[]Summary{steerAt("r1", 33, 593, flowAt("heavy", 0, 0), other, flowAt("third", 30, 300))}, []string{"heavy"}},
		{"absent from a peer but at its fair share", steerAt("r0", 33, 300, flowAt("heavy", 33, 300)),
			[]Summary{steerAt("r1", 33, 300, flowAt("b", 33, 300))}, nil},
		{"nothing waits", steerAt("r0", 33, 20, flowAt("a", 10, 10), flowAt("b", 10, 10.5)), []Summary{steerAt("r1", 33, 0)}, nil},
	} {
		if d := cmp.Diff(c.want, steeredNames(c.own, c.peers)); d != "" {
			t.Errorf("%s: Steered (-want +got):\n%s", c.name, d)
		}
	}
}

// TestSteeredAtItsBoundaries: a flow asking exactly SteerWaiting times
// what it holds does not wait; a peer exactly SteerPressed as pressed is
// not calmer; a flow holding exactly SteerBelowShare of its share is not
// below it. One step past each and the flow is moved.
func TestSteeredAtItsBoundaries(t *testing.T) {
	// Own: 40 seats, pressed 100/40; the peer: 40 seats.
	for _, c := range []struct {
		name       string
		asked      float64 // what flow f asks for; it holds 20
		peerDemand float64 // SteerPressed × 100 = 50 is the boundary
		want       bool
	}{
		{"asks exactly SteerWaiting × held, the peer idle", 22, 0, false},
		{"asks a little more", 22.01, 0, true},
		{"the peer exactly half as pressed", 100, 50, false},
		{"the peer a little less", 100, 49.9, true},
	} {
		own := steerAt("r0", 40, 100, flowAt("f", 20, c.asked), flowAt("g", 20, 100-c.asked))
		peer := steerAt("r1", 40, c.peerDemand, flowAt("f", 1, 1), flowAt("g", 1, 1))
		if got := len(steeredNames(own, []Summary{peer})) > 0 && steeredNames(own, []Summary{peer})[0] == "f"; got != c.want {
			t.Errorf("%s: Steered moves f = %v, want %v (got %v)", c.name, got, c.want, steeredNames(own, []Summary{peer}))
		}
	}
	// Below its share: f alone on r0 (40 seats), absent from r1, whose
	// 40 seats g fills; both ask for 200, so f's fair share is 40.
	for _, c := range []struct {
		held float64
		want bool
	}{{SteerBelowShare * 40, false}, {SteerBelowShare*40 - 0.01, true}} {
		own := steerAt("r0", 40, 200, flowAt("f", c.held, 200))
		peer := steerAt("r1", 40, 200, flowAt("g", 40, 200))
		if got := len(steeredNames(own, []Summary{peer})) == 1; got != c.want {
			t.Errorf("f holds %v of its share 40: moved = %v, want %v", c.held, got, c.want)
		}
	}
}

// TestSteeredCountsServerSeats: how pressed a replica is counts the seats
// upstream's borrowing lets the level hold there (its nominal seats plus
// what the other levels lend, within its upper limit), not its current
// limit, which coordination lowers on an idle replica.
func TestSteeredCountsServerSeats(t *testing.T) {
	own := steerAt("r0", 40, 100, flowAt("f", 20, 100))
	// Its workload-low flow asks for much, which does not press global-default.
	peer := Summary{Replica: "r1", Flows: []FlowDemand{flowAt("f", 1, 1), {Level: "workload-low", Flow: "batch", Seats: 5, Demand: 500}}, Levels: []LevelDemand{
		// 10 nominal + 30 lendable by workload-low = 40 server seats; its
		// current limit lowered to 10. Demand 15: 15/40 is under half of
		// own's 100/40; 15/10 is not.
		{Name: gd, CurrentCL: 10, Demand: seatsDemand(15), Limits: seats.LevelLimits{Name: gd, NominalCL: 10, MinCL: 5, MaxCL: 50}},
		{Name: "workload-low", CurrentCL: 5, Limits: seats.LevelLimits{Name: "workload-low", NominalCL: 35, LendableCL: 30}},
	}}
	if d := cmp.Diff([]string{"f"}, steeredNames(own, []Summary{peer})); d != "" {
		t.Errorf("Steered (-want +got):\n%s", d)
	}
	if got := serverSeats(peer, gd); got != 40 {
		t.Errorf("serverSeats = %d, want 40", got)
	}
	peer.Levels[0].Limits.MaxCL = 30
	if got := serverSeats(peer, gd); got != 30 {
		t.Errorf("serverSeats within an upper limit of 30 = %d, want 30", got)
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
