package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

var start = time.Unix(1_800_000_000, 0).UTC()

// stepClock is a fairqueue.Clock the test sets; it has no timers (the
// controllers adjust manually).
type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time { return c.now }
func (c *stepClock) AfterFunc(time.Duration, func()) fairqueue.Timer {
	panic("stepClock: no timers")
}

// rejectingConfig is the bootstrap configuration with global-default
// rejecting instead of queuing, so that every Wait answers at once.
func rejectingConfig() *flowschema.Config {
	cfg := flowschema.DefaultConfig()
	for i := range cfg.PriorityLevels {
		if l := cfg.PriorityLevels[i].Spec.Limited; l != nil && cfg.PriorityLevels[i].Name == "global-default" {
			l.LimitResponse = flowschema.LimitResponse{Type: flowschema.LimitResponseReject}
		}
	}
	return cfg
}

func newController(t *testing.T, cfg *flowschema.Config, clk fairqueue.Clock, fl *apf.FlowLimiter) *apf.Controller {
	t.Helper()
	c, err := apf.New(cfg, apf.Options{ServerConcurrencyLimit: 60, Clock: clk, AdjustPeriod: apf.ManualAdjustment, FlowLimiter: fl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// join returns a controller of ServerConcurrencyLimit server for cfg,
// joined to a fleet with ccfg (fleet.Join), both closed at the test's end.
func join(t *testing.T, cfg *flowschema.Config, server int, clk fairqueue.Clock, ccfg fleet.CoordinatorConfig) (*apf.Controller, *fleet.Coordinator) {
	t.Helper()
	c, co, err := fleet.Join(cfg, apf.Options{ServerConcurrencyLimit: server, Clock: clk}, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	t.Cleanup(co.Close)
	return c, co
}

func userRequest(user string) *apf.Request {
	return &apf.Request{
		User: apf.User{Name: user, Groups: []string{"system:authenticated"}},
		Info: apf.RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1",
			Namespace: "default", Resource: "configmaps", Name: "x", Path: "/api/v1/namespaces/default/configmaps/x"},
	}
}

// replay drives c through a fixed load for 60 s in 100 ms steps: three
// users, the first sending far more than its level holds, each request
// held for 1 to 3 s. round runs every 10 s. It returns every decision
// and the level limits after every round.
func replay(t *testing.T, c *apf.Controller, clk *stepClock, round func(now time.Time)) []string {
	t.Helper()
	type held struct {
		tk  apf.Ticket
		end time.Time
	}
	var out []string
	var live []held
	for step := range 600 {
		clk.now = start.Add(time.Duration(step) * 100 * time.Millisecond)
		kept := live[:0]
		for _, h := range live {
			if !clk.now.Before(h.end) {
				h.tk.Finish()
				continue
			}
			kept = append(kept, h)
		}
		live = kept
		if step > 0 && step%100 == 0 {
			round(clk.now)
			out = append(out, fmt.Sprintf("%v limits %+v", clk.now.Sub(start), c.Limits()["global-default"]))
		}
		for u, n := range []int{8, 1, 1} {
			for i := range n {
				tk, err := c.Wait(context.Background(), userRequest(fmt.Sprint("user-", u)), nil)
				var rej *apf.RejectedError
				switch {
				case errors.As(err, &rej):
					out = append(out, fmt.Sprintf("%d user-%d %s", step, u, rej.Reason))
				case err != nil:
					t.Fatalf("Wait: %v", err)
				default:
					live = append(live, held{tk, clk.now.Add(time.Duration(1+(step+i+u)%3) * time.Second)})
				}
			}
		}
	}
	for _, h := range live {
		h.tk.Finish()
	}
	return out
}

// TestCoordinatorAloneDecidesAsToday: a coordinated controller that is
// alone in its fleet, or whose store is unreachable, takes every decision
// an uncoordinated controller adjusting at the same times takes.
func TestCoordinatorAloneDecidesAsToday(t *testing.T) {
	clk := &stepClock{now: start}
	plain := newController(t, rejectingConfig(), clk, nil)
	want := replay(t, plain, clk, func(now time.Time) { plain.AdjustBorrowing(now) })
	if len(want) < 20 {
		t.Fatalf("the load decided only %d times; want rejections to compare", len(want))
	}
	for _, down := range []bool{false, true} {
		store := fleet.NewMemoryStore()
		store.SetUnavailable(down)
		clk.now = start
		c, co := join(t, rejectingConfig(), 60, clk, fleet.CoordinatorConfig{Replica: "r0", Store: store})
		got := replay(t, c, clk, func(now time.Time) {
			err := co.Round(context.Background(), now)
			if (err != nil) != down {
				t.Errorf("store down=%v: Round = %v", down, err)
			}
		})
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("store down=%v: decisions (-uncoordinated +coordinated alone):\n%s", down, d)
		}
	}
}

// TestCoordinatorCapsSharedFlow: r0 runs a real controller; a peer, r1,
// reports the flow "spread" far heavier there. After a round, r0 holds
// "spread" to its part of one fleet-wide share, refusing the rest with
// concurrency-limit, while "pinned", on r0 only and within its share, is
// not held; without a peer nothing is.
func TestCoordinatorCapsSharedFlow(t *testing.T) {
	for _, withPeer := range []bool{true, false} {
		clk := &stepClock{now: start}
		store := fleet.NewMemoryStore()
		c, co := join(t, nil, 600, clk, fleet.CoordinatorConfig{Replica: "r0", Store: store, Period: time.Second})
		if withPeer {
			peer := fleet.Summary{Replica: "r1", Period: 1, ServerConcurrencyLimit: 600,
				Levels: []fleet.LevelDemand{{Name: "global-default", CurrentCL: 49}},
				Flows: []fleet.FlowDemand{{Level: "global-default", Flow: "global-default/spread", Seats: 25, Demand: 500},
					{Level: "global-default", Flow: "global-default/other", Seats: 24, Demand: 500}}}
			if err := store.Publish(context.Background(), peer); err != nil {
				t.Fatal(err)
			}
		}
		hold := func(user string, n int) (tks []apf.Ticket, reasons []fairqueue.Reason) {
			for range n {
				tk, err := c.Wait(context.Background(), userRequest(user), nil)
				var rej *apf.RejectedError
				switch {
				case errors.As(err, &rej):
					reasons = append(reasons, rej.Reason)
				case err != nil:
					t.Fatal(err)
				default:
					tks = append(tks, tk)
				}
			}
			return tks, reasons
		}
		a, _ := hold("spread", 20)
		b, _ := hold("pinned", 10)
		clk.now = start.Add(time.Second)
		for _, tk := range append(a, b...) {
			tk.Finish()
		}
		if err := co.Round(context.Background(), clk.now); err != nil {
			t.Fatal(err)
		}
		// As many spread requests as the level has seats: only a cap
		// refuses some; pinned then gets the seats left, at most 10.
		seats := c.Limits()["global-default"].Current
		spread, refused := hold("spread", seats)
		pinned, refusedPinned := hold("pinned", min(10, seats-len(spread)))
		if withPeer && (len(refused) == 0 || refused[0] != fairqueue.ReasonConcurrencyLimit || len(spread) == 0) {
			t.Errorf("with a heavier peer: spread admitted %d, refused %v; want some admitted and the rest refused with concurrency-limit", len(spread), refused)
		}
		if !withPeer && len(refused) > 0 {
			t.Errorf("alone: spread refused %v, want all admitted", refused)
		}
		if len(refusedPinned) > 0 {
			t.Errorf("peer=%v: pinned refused %v, want all admitted", withPeer, refusedPinned)
		}
		for _, tk := range append(spread, pinned...) {
			tk.Finish()
		}
		c.Close()
	}
}

// TestCoordinatorStartClose: two coordinators' own goroutines exchange
// until Close, which leaves no goroutine behind.
func TestCoordinatorStartClose(t *testing.T) {
	defer goleak.VerifyNone(t)
	store := fleet.NewMemoryStore()
	var cos []*fleet.Coordinator
	for r := range 2 {
		c, co, err := fleet.Join(nil, apf.Options{ServerConcurrencyLimit: 600}, fleet.CoordinatorConfig{Replica: fmt.Sprint("r", r), Store: store, Period: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		co.Start()
		co.Start()
		cos = append(cos, co)
	}
	deadline := time.Now().Add(10 * time.Second)
	for cos[0].Peers() != 1 || cos[1].Peers() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("peers = %d, %d after 10 s; want 1 each", cos[0].Peers(), cos[1].Peers())
		}
		time.Sleep(time.Millisecond)
	}
	for _, co := range cos {
		co.Close()
		co.Close()
	}
}

// TestJoinReportsEveryBadField: Join refuses, all at once, what the
// fleet's config and the controller's options get wrong, including the
// facts the Coordinator owns (the adjustment's period, the seat policy).
func TestJoinReportsEveryBadField(t *testing.T) {
	opts := apf.Options{AdjustPeriod: time.Second, SeatPolicy: staticPolicy{}}
	c, co, err := fleet.Join(nil, opts, fleet.CoordinatorConfig{Period: -1, Timeout: -2})
	if c != nil || co != nil {
		t.Errorf("Join(bad) returned a controller or coordinator")
	}
	for _, want := range []string{"Replica is empty", "Store is nil", "Period=-1ns", "Timeout=-2ns",
		"AdjustPeriod=1s", "SeatPolicy=fleet_test.staticPolicy", "ServerConcurrencyLimit=0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Join(bad) = %v, want it to name %q", err, want)
		}
	}
}

type staticPolicy struct{}

func (staticPolicy) CurrentLimits(time.Time) map[string]int { return nil }

// TestJoinSharesTheControllersFacts: the Coordinator runs the
// controller's adjustment (the controller arms no timer of its own: the
// stepClock panics if it does), an explicit FlowLimiter is the one the
// controller counts flows in, and alone the Coordinator as seat policy
// decides nothing.
func TestJoinSharesTheControllersFacts(t *testing.T) {
	clk := &stepClock{now: start}
	fl := apf.NewFlowLimiter()
	c, co, err := fleet.Join(nil, apf.Options{ServerConcurrencyLimit: 60, Clock: clk, FlowLimiter: fl}, fleet.CoordinatorConfig{Replica: "r0", Store: fleet.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tk, err := c.Wait(context.Background(), userRequest("alice"), nil)
	if err != nil {
		t.Fatal(err)
	}
	clk.now = clk.now.Add(time.Second)
	tk.Finish()
	if u := fl.TakeUsage(clk.now); len(u) != 1 || u[0].SeatSeconds != 1 {
		t.Errorf("the given FlowLimiter's usage = %+v, want alice's one seat-second", u)
	}
	if err := co.Round(context.Background(), clk.now); err != nil {
		t.Fatal(err)
	}
	if got := co.CurrentLimits(clk.now); got != nil {
		t.Errorf("alone, the policy decides %v, want nil", got)
	}
}

// goAwayFleet is replica r0, with a TargetedGoAway, beside peer r1 whose
// summaries a test publishes.
type goAwayFleet struct {
	clk   *stepClock
	store *fleet.MemoryStore
	c     *apf.Controller
	g     *apf.TargetedGoAway
	co    *fleet.Coordinator
}

func newGoAwayFleet(t *testing.T) *goAwayFleet {
	t.Helper()
	f := &goAwayFleet{clk: &stepClock{now: start}, store: fleet.NewMemoryStore()}
	f.g, _ = apf.NewTargetedGoAway(time.Nanosecond)
	f.c, f.co = join(t, nil, 60, f.clk, fleet.CoordinatorConfig{Replica: "r0", Store: f.store, Period: time.Second, GoAway: f.g})
	return f
}

// newCapsFleet is newGoAwayFleet without a GoAway: nothing targeted.
func newCapsFleet(t *testing.T) *goAwayFleet {
	t.Helper()
	f := &goAwayFleet{clk: &stepClock{now: start}, store: fleet.NewMemoryStore()}
	f.c, f.co = join(t, nil, 60, f.clk, fleet.CoordinatorConfig{Replica: "r0", Store: f.store, Period: time.Second})
	return f
}

// round publishes r1's summary number period, with peerDemand seats
// asked for at global-default (r0's limits, as a server of the same size)
// by peerFlows, runs one second of a request by each of users on r0
// (those over global-default's seats wait in its queues), r0's round,
// and then ends the waits.
func (f *goAwayFleet) round(t *testing.T, period int, peerDemand float64, peerFlows []string, users ...string) {
	t.Helper()
	peer := busyPeer(f.c.Limits()["global-default"])
	peer.Period = uint64(period)
	peer.Levels[0].Demand = seats.SeatDemand{Average: peerDemand, Smoothed: peerDemand}
	for _, name := range peerFlows {
		peer.Flows = append(peer.Flows, fleet.FlowDemand{Level: "global-default", Flow: "global-default/" + name,
			Seats: peerDemand / float64(len(peerFlows)), Demand: peerDemand / float64(len(peerFlows))})
	}
	if err := f.store.Publish(context.Background(), peer); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		tk  apf.Ticket
		err error
	}
	var tks []apf.Ticket
	var waiting []chan answer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, u := range users {
		bc := &blockCtx{Context: ctx, blocked: make(chan struct{})}
		done := make(chan answer, 1)
		go func() {
			tk, err := f.c.Wait(bc, userRequest(u), nil)
			done <- answer{tk, err}
		}()
		select {
		case a := <-done:
			var rej *apf.RejectedError
			switch {
			case errors.As(a.err, &rej): // its queues are full
			case a.err != nil:
				t.Fatal(a.err)
			default:
				tks = append(tks, a.tk)
			}
		case <-bc.blocked:
			waiting = append(waiting, done)
		}
	}
	f.clk.now = f.clk.now.Add(time.Second)
	for _, tk := range tks {
		tk.Finish()
	}
	if err := f.co.Round(context.Background(), f.clk.now); err != nil {
		t.Fatal(err)
	}
	cancel()
	for _, done := range waiting {
		if a := <-done; a.err == nil {
			a.tk.Finish()
		}
	}
}

// blockCtx tells, by closing blocked, that Wait is about to wait in a
// queue: Wait asks for Done only then.
type blockCtx struct {
	context.Context
	blocked chan struct{}
	once    sync.Once
}

func (b *blockCtx) Done() <-chan struct{} {
	b.once.Do(func() { close(b.blocked) })
	return b.Context.Done()
}

// fullOf returns users whose requests fill r0's global-default with
// more than its seats, the heaviest (by demand) first: heavy's n
// requests, then busy's n (one of them served first, so that its mean
// execution time, which its rejected requests are counted at, is known),
// and light's one.
func fullOf(heavy, busy string, n int) []string {
	users := []string{busy, "light"}
	for range n {
		users = append(users, heavy)
	}
	for range n - 2 {
		users = append(users, busy)
	}
	return users
}

func flowKey(user string) apf.FlowKey {
	return apf.FlowKey{PriorityLevel: "global-default", FlowSchema: "global-default", Distinguisher: user}
}

// TestCoordinatorTargetsGoAway: every flow that waits on r0 is targeted
// while its peer idles, or while the peer is as busy but lacks the flow
// (below its fair share, it would get a share there); a flow that gets
// what it asks for never is; and nothing is targeted once the peer is as
// busy with the same flows.
func TestCoordinatorTargetsGoAway(t *testing.T) {
	for _, c := range []struct {
		name       string
		peerDemand float64
		peerFlows  []string
		want       []apf.FlowKey
	}{
		{"the peer idles", 0, nil, []apf.FlowKey{flowKey("busy"), flowKey("heavy")}},
		{"the peer as busy, without them", 1000, []string{"other"}, []apf.FlowKey{flowKey("busy"), flowKey("heavy")}},
		{"the peer as busy with them", 1000, []string{"heavy", "busy", "light"}, nil},
	} {
		f := newGoAwayFleet(t)
		f.round(t, 1, c.peerDemand, c.peerFlows, fullOf("heavy", "busy", 60)...)
		got := f.g.Targets()
		slices.SortFunc(got, func(a, b apf.FlowKey) int { return strings.Compare(a.Distinguisher, b.Distinguisher) })
		if d := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: targets (-want +got):\n%s", c.name, d)
		}
		if got, want := f.g.Closes(f.clk.now, f.clk.now, flowKey("heavy")), len(c.want) > 0; got != want {
			t.Errorf("%s: GoAway closes heavy = %v, want %v", c.name, got, want)
		}
	}
}

// TestCoordinatorAppliesFleetLevelLimits: with a peer whose demand is all
// at global-default, an idle replica's global-default limit follows the
// fleet's borrowing (its part of the fleet's demand: none, so its lower
// bound), not its own adjustment's.
func TestCoordinatorAppliesFleetLevelLimits(t *testing.T) {
	for _, targetOnly := range []bool{false, true} {
		alone, fleetwide, lower := fleetLevelLimit(t, targetOnly)
		switch {
		case !targetOnly && (fleetwide != lower || alone == fleetwide):
			t.Errorf("global-default's limit: alone %d, coordinated %d; want the coordinated one at its lower bound %d, unlike alone", alone, fleetwide, lower)
		case targetOnly && alone != fleetwide:
			t.Errorf("TargetOnly: global-default's limit: alone %d, coordinated %d; want the same", alone, fleetwide)
		}
	}
}

// busyPeer is replica r1's summary at its period 1: all its demand (50
// seats) at global-default, whose limits are gd.
func busyPeer(gd apf.Limits) fleet.Summary {
	return fleet.Summary{Replica: "r1", Period: 1, ServerConcurrencyLimit: 60, Levels: []fleet.LevelDemand{{Name: "global-default", CurrentCL: gd.Current,
		Limits: seats.LevelLimits{Name: "global-default", NominalCL: gd.Nominal, LendableCL: gd.Lendable, BorrowingCL: gd.Borrowing, MinCL: gd.Lower, MaxCL: gd.Upper},
		Demand: seats.SeatDemand{Average: 50, Smoothed: 50, HighWatermark: 50}}}}
}

// fleetLevelLimit runs one round of r0 beside a busy peer and returns
// global-default's limit on a plain controller and on r0, and its lower
// bound.
func fleetLevelLimit(t *testing.T, targetOnly bool) (alone, fleetwide, lower int) {
	t.Helper()
	clk := &stepClock{now: start}
	plain := newController(t, nil, clk, nil)
	store := fleet.NewMemoryStore()
	c, co := join(t, nil, 60, clk, fleet.CoordinatorConfig{Replica: "r0", Store: store, Period: time.Second, TargetOnly: targetOnly})
	gd := c.Limits()["global-default"]
	peer := busyPeer(gd)
	if err := store.Publish(context.Background(), peer); err != nil {
		t.Fatal(err)
	}
	clk.now = start.Add(time.Second)
	plain.AdjustBorrowing(clk.now)
	if err := co.Round(context.Background(), clk.now); err != nil {
		t.Fatal(err)
	}
	return plain.Limits()["global-default"].Current, c.Limits()["global-default"].Current, gd.Lower
}

// TestCoordinatorKeepsMovingAWaitingFlow: a flow closed in one round and
// still waiting on r0 in the next (its client came back, or its backlog
// here is served) stays targeted: its request that arrived after the
// close closes again, one that arrived before does not. A flow that stops
// waiting is no longer targeted.
func TestCoordinatorKeepsMovingAWaitingFlow(t *testing.T) {
	f := newGoAwayFleet(t)
	f.round(t, 1, 0, nil, fullOf("heavy", "busy", 60)...)
	closedAt := f.clk.now
	if !f.g.Closes(closedAt, closedAt, flowKey("heavy")) {
		t.Fatal("round 1: GoAway closes heavy = false, want true")
	}
	f.round(t, 2, 0, nil, fullOf("heavy", "busy", 60)...)
	now := f.clk.now
	if f.g.Closes(now, closedAt, flowKey("heavy")) {
		t.Error("round 2: GoAway closes heavy's request from before the close; want not")
	}
	if !f.g.Closes(now, now, flowKey("heavy")) {
		t.Error("round 2: GoAway closes heavy's request from after the close = false, want true")
	}
	// Round 3 still counts the waits round 2 ended; round 4 has none.
	f.round(t, 3, 0, nil, "heavy", "light")
	f.round(t, 4, 0, nil, "heavy", "light")
	if got := f.g.Targets(); len(got) != 0 {
		t.Errorf("round 4, nothing waits: targets %v, want none", got)
	}
}

// watchStore is a MemoryStore that calls during on every Publish: the
// moment between a round's adjustment and its decisions.
type watchStore struct {
	*fleet.MemoryStore
	during func()
}

func (w watchStore) Publish(ctx context.Context, s fleet.Summary) error {
	w.during()
	return w.MemoryStore.Publish(ctx, s)
}

// TestCoordinatorHoldsFleetLimitsThroughTheRound: once the fleet has
// lowered an idle replica's global-default, the next round's adjustment
// keeps that limit through the exchange (no request is dispatched at the
// replica's own borrowing result in between), and the summary still
// carries the replica's own result. When the peer is gone the replica
// gets its own limit back.
func TestCoordinatorHoldsFleetLimitsThroughTheRound(t *testing.T) {
	clk := &stepClock{now: start}
	plain := newController(t, nil, clk, nil)
	var seen []int
	var c *apf.Controller
	store := watchStore{MemoryStore: fleet.NewMemoryStore(), during: func() { seen = append(seen, c.Limits()["global-default"].Current) }}
	c, co := join(t, nil, 60, clk, fleet.CoordinatorConfig{Replica: "r0", Store: store, Period: time.Second, StaleAfter: 1})
	gd := c.Limits()["global-default"]
	peer := busyPeer(gd)
	var published []int
	for round := 1; round <= 4; round++ {
		if round <= 2 {
			peer.Period = uint64(round)
			if err := store.MemoryStore.Publish(context.Background(), peer); err != nil {
				t.Fatal(err)
			}
		}
		clk.now = start.Add(time.Duration(round) * time.Second)
		plain.AdjustBorrowing(clk.now)
		if err := co.Round(context.Background(), clk.now); err != nil {
			t.Fatal(err)
		}
		all, _ := store.Read(context.Background())
		for _, s := range all {
			if s.Replica == "r0" {
				published = append(published, s.Levels[slices.IndexFunc(s.Levels, func(l fleet.LevelDemand) bool { return l.Name == "global-default" })].CurrentCL)
			}
		}
		t.Logf("round %d: global-default %d (plain %d) during the exchange %d, published %d", round,
			c.Limits()["global-default"].Current, plain.Limits()["global-default"].Current, seen[len(seen)-1], published[len(published)-1])
	}
	own := plain.Limits()["global-default"].Current
	if own == gd.Lower {
		t.Fatalf("the plain controller's global-default = its lower bound %d: the test needs them to differ", gd.Lower)
	}
	// Round 1 starts from the controller's own limit; round 2 holds the
	// fleet's decision of round 1 (the lower bound) through its exchange.
	if seen[1] != gd.Lower {
		t.Errorf("global-default during round 2's exchange = %d, want the fleet's held %d", seen[1], gd.Lower)
	}
	if published[1] != own {
		t.Errorf("round 2 published global-default's CurrentCL %d, want the replica's own borrowing result %d", published[1], own)
	}
	// The peer stopped publishing after round 2 and is stale from round 3
	// (StaleAfter 1) on:
	// the replica decides alone again.
	if got := c.Limits()["global-default"].Current; got != own {
		t.Errorf("global-default after the peer went stale = %d, want the controller's own %d", got, own)
	}
}

// TestCoordinatorLeavesTargetedFlowsOutOfCaps: a flow the GoAway
// targets is not capped (a cap computed from where it was fights its
// move), so busy, targeted beside heavy while the peer idles, may take
// all of r0's seats; in the same rounds without a GoAway busy is held to
// its share beside heavy.
func TestCoordinatorLeavesTargetedFlowsOutOfCaps(t *testing.T) {
	f := newGoAwayFleet(t)
	f.round(t, 1, 0, nil, fullOf("heavy", "busy", 60)...)
	if !slices.Contains(f.g.Targets(), flowKey("busy")) {
		t.Fatalf("targets %v, want busy among them", f.g.Targets())
	}
	if admitted, seats, refused := f.admitBusy(t); admitted < seats*3/4 {
		t.Errorf("targeted: busy admitted %d of global-default's %d seats (refused: %v); want at least 3/4 of them", admitted, seats, refused)
	}
	f = newCapsFleet(t)
	f.round(t, 1, 0, nil, fullOf("heavy", "busy", 60)...)
	if admitted, seats, _ := f.admitBusy(t); admitted >= seats*3/4 {
		t.Errorf("not targeted: busy admitted %d of global-default's %d seats; want under 3/4 of them (capped)", admitted, seats)
	}
}

// admitBusy offers busy as many requests as global-default has seats and
// returns how many were admitted (finished at the test's end), the seats
// and the reasons of the refusals.
func (f *goAwayFleet) admitBusy(t *testing.T) (admitted, seats int, refused []fairqueue.Reason) {
	t.Helper()
	seats = f.c.Limits()["global-default"].Current
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range seats {
		tk, err := f.c.Wait(ctx, userRequest("busy"), nil)
		var rej *apf.RejectedError
		switch {
		case errors.As(err, &rej):
			refused = append(refused, rej.Reason)
		case err != nil:
			t.Fatal(err)
		default:
			admitted++
			t.Cleanup(tk.Finish)
		}
	}
	return admitted, seats, refused
}

// TestCoordinatorDecisionsTakeEffectWhenRoundReturns: the fleet's level
// limits are in force when the round that decided them returns, and the
// controller's own are back when the round in which the last peer went
// stale returns, without waiting for the next adjustment.
func TestCoordinatorDecisionsTakeEffectWhenRoundReturns(t *testing.T) {
	clk := &stepClock{now: start}
	plain := newController(t, nil, clk, nil)
	store := fleet.NewMemoryStore()
	c, co := join(t, nil, 60, clk, fleet.CoordinatorConfig{Replica: "r0", Store: store, Period: time.Second, StaleAfter: 1})
	gd := c.Limits()["global-default"]
	if err := store.Publish(context.Background(), busyPeer(gd)); err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 2; round++ { // the peer publishes once: stale in round 2
		clk.now = start.Add(time.Duration(round) * time.Second)
		plain.AdjustBorrowing(clk.now)
		if err := co.Round(context.Background(), clk.now); err != nil {
			t.Fatal(err)
		}
		got, own := c.Limits()["global-default"], plain.Limits()["global-default"].Current
		decided, ok := co.CurrentLimits(clk.now)["global-default"]
		switch {
		case round == 1 && (!ok || got.Current != decided || decided == own):
			t.Errorf("round 1: global-default %d, the fleet decided %d (%v), alone %d; want the decision in force, unlike alone", got.Current, decided, ok, own)
		case round == 2 && (ok || got.Current != own):
			t.Errorf("round 2, the peer stale: global-default %d (decision %d, %v), want the controller's own %d", got.Current, decided, ok, own)
		}
	}
}

// armedClock records the periods of the timers armed on it.
type armedClock struct {
	stepClock
	mu    sync.Mutex
	armed []time.Duration
}

func (c *armedClock) AfterFunc(d time.Duration, _ func()) fairqueue.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = append(c.armed, d)
	return stoppedTimer{}
}

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return true }

// TestJoinTimesRoundsOnTheControllersClock: without a Clock of its own,
// the Coordinator's rounds run on the controller's, every Period;
// without a Period, every DefaultPeriod, or DefaultSteeringPeriod with a
// GoAway.
func TestJoinTimesRoundsOnTheControllersClock(t *testing.T) {
	g, err := apf.NewTargetedGoAway(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg  fleet.CoordinatorConfig
		want time.Duration
	}{
		{fleet.CoordinatorConfig{Period: 7 * time.Second}, 7 * time.Second},
		{fleet.CoordinatorConfig{}, fleet.DefaultPeriod},
		{fleet.CoordinatorConfig{GoAway: g}, fleet.DefaultSteeringPeriod},
		{fleet.CoordinatorConfig{GoAway: g, Period: 7 * time.Second}, 7 * time.Second},
	} {
		roundsEvery(t, c.cfg, c.want)
	}
}

// roundsEvery checks that a Coordinator of cfg, started, arms a timer of
// period on the controller's clock.
func roundsEvery(t *testing.T, cfg fleet.CoordinatorConfig, period time.Duration) {
	t.Helper()
	clk := &armedClock{stepClock: stepClock{now: start}}
	cfg.Replica, cfg.Store = "r0", fleet.NewMemoryStore()
	c, co, err := fleet.Join(nil, apf.Options{ServerConcurrencyLimit: 60, Clock: clk}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	co.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		clk.mu.Lock()
		armed := slices.Clone(clk.armed)
		clk.mu.Unlock()
		if slices.Contains(armed, period) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timers armed on the controller's clock: %v; want the Coordinator's period of %v among them", armed, period)
		}
		time.Sleep(time.Millisecond)
	}
	co.Close()
}
