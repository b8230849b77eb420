package fleet

import (
	"context"
	"testing"

	"github.com/fairslice/fairslice/seats"
)

// TestExchangeTakesARestartedPeersSummary: a peer that restarts numbers
// its periods from 1 again; its first summary after the restart is news
// at once (its Period changed), not ignored until the new count passes
// the old one.
func TestExchangeTakesARestartedPeersSummary(t *testing.T) {
	ctx := context.Background()
	st := NewMemoryStore()
	a, b := newExchange(t, "a", st), newExchange(t, "b", st)
	for range 5 {
		if _, err := b.Round(ctx, Summary{ServerConcurrencyLimit: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Round(ctx, Summary{}); err != nil {
			t.Fatal(err)
		}
	}
	restarted := newExchange(t, "b", st) // counts from 1 again
	if _, err := restarted.Round(ctx, Summary{ServerConcurrencyLimit: 20}); err != nil {
		t.Fatal(err)
	}
	peers, err := a.Round(ctx, Summary{})
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 1 || peers[0].Period != 1 || peers[0].ServerConcurrencyLimit != 20 {
		t.Fatalf("a's peers after b restarted = %+v, want b's new summary (period 1, limit 20)", peers)
	}
}

// TestHeaviestTakesTheFirstOfEquals: of flows asking for the same seats,
// heaviest returns the first in the summary's order.
func TestHeaviestTakesTheFirstOfEquals(t *testing.T) {
	own := Summary{Flows: []FlowDemand{
		{Level: gd, Flow: "a", Demand: 5},
		{Level: gd, Flow: "b", Demand: 9},
		{Level: gd, Flow: "c", Demand: 9},
	}}
	if f, ok := heaviest(own); !ok || f.Flow != "b" {
		t.Errorf("heaviest(a 5, b 9, c 9) = %q, %v; want b (the first of equals)", f.Flow, ok)
	}
	if _, ok := heaviest(Summary{}); ok {
		t.Errorf("heaviest(no flows) found one")
	}
}

// TestMoveHelpsAtItsBoundaries: the move helps when the other flows ask
// for at least the level's seats here (equal counts) and a peer has at
// least the flow's seats idle (equal counts); one seat less on either side
// and it does not.
func TestMoveHelpsAtItsBoundaries(t *testing.T) {
	at := func(name string, cl int, demand float64, flows ...FlowDemand) Summary {
		return Summary{Replica: name, Flows: flows,
			Levels: []LevelDemand{{Name: gd, CurrentCL: cl, Demand: seats.SeatDemand{Average: demand}}}}
	}
	heavy := FlowDemand{Level: gd, Flow: "heavy", Seats: 10, Demand: 100}
	for _, c := range []struct {
		name       string
		others     float64 // what the other flows here ask for; the level has 30 seats
		peerDemand float64 // the peer's demand of its 30 seats
		want       bool
	}{
		{"others exactly fill the level, the peer has exactly the flow's seats idle", 30, 20, true},
		{"others one seat short of the level", 29, 20, false},
		{"the peer one seat short of the flow's", 30, 21, false},
	} {
		own := at("r0", 30, 130, heavy, FlowDemand{Level: gd, Flow: "other", Seats: c.others, Demand: c.others})
		if got := MoveHelps(own, heavy, []Summary{at("r1", 30, c.peerDemand)}); got != c.want {
			t.Errorf("%s: MoveHelps = %v, want %v", c.name, got, c.want)
		}
	}
}
