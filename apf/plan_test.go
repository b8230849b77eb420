package apf

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Two queuing levels share 20 seats; "work" lends half of its seats and
// "other" half of its. When only work has demand, the adjustment lends it
// other's lendable seats.
const borrowYAML = testConfigYAML + `
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: other}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    lendablePercent: 50
    limitResponse:
      type: Queue
      queuing: {queues: 4, handSize: 2, queueLengthLimit: 50}
`

func TestAdjustBorrowing(t *testing.T) {
	clk := newFakeClock()
	c, err := New(mustDecode(t, borrowYAML), Options{ServerConcurrencyLimit: 25, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Shares: catch-all 5, work 10, other 10 → nominal 5, 10, 10.
	if n := levelLimits(c, "work").Nominal; n != 10 {
		t.Fatalf("nominal of work = %d, want 10", n)
	}
	before := levelLimits(c, "work").Current
	demand, release := fillWork(t, c)
	defer release()
	clk.Step(BorrowingAdjustmentPeriod)
	c.AdjustBorrowing(clk.Now())
	after := levelLimits(c, "work")
	other := levelLimits(c, "other")
	if after.Current <= before || after.Current <= after.Nominal {
		t.Errorf("work's limit after a period of demand: %d (was %d, nominal %d); want it to borrow", after.Current, before, after.Nominal)
	}
	if other.Current >= other.Nominal || other.Current < other.Lower {
		t.Errorf("other's limit with no demand: %d, want between its lower bound %d and its nominal %d", other.Current, other.Lower, other.Nominal)
	}
	if after.DemandHighWatermark != demand || after.DemandAverage != demand {
		t.Errorf("work's demand: high watermark %v, average %v; want %v", after.DemandHighWatermark, after.DemandAverage, demand)
	}
	// The raised limit dispatches waiting requests at once.
	if got := c.Dump()[levelIndex(c, "work")].QueueSet.Executing; got != min(int(demand), after.Current) {
		t.Errorf("executing after the raise = %d, want %d", got, min(int(demand), after.Current))
	}
}

// fillWork keeps work's 8 queue slots full (hand 2 × limit 2 waiting +
// 10 executing) and returns the seats executing or waiting, and a func
// that finishes them all (with a deadline on the waiters' return).
func fillWork(t *testing.T, c *Controller) (demand float64, release func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var admitted []Ticket
	for i := range 10 {
		tk, err := c.Wait(ctx, tenant(string(rune('a'+i))), nil)
		if err != nil {
			t.Fatal(err)
		}
		admitted = append(admitted, tk)
	}
	done := make(chan Ticket, 8)
	for i := range 8 {
		go func() {
			tk, _ := c.Wait(ctx, tenant(string(rune('k'+i))), nil)
			done <- tk
		}()
	}
	// Each of the 18 executes, waits or is rejected with queue-full.
	waitFor(t, func() bool {
		d := c.Dump()[levelIndex(c, "work")].QueueSet
		if d.Executing+d.Waiting+d.Rejected > 18 {
			t.Fatalf("work: %+v", d)
		}
		return d.Executing+d.Waiting+d.Rejected == 18
	})
	d := c.Dump()[levelIndex(c, "work")].QueueSet
	if d.Waiting < 4 {
		t.Fatalf("only %d requests wait (%d executing)", d.Waiting, d.Executing)
	}
	return float64(d.Executing + d.Waiting), func() {
		defer cancel()
		for _, tk := range admitted {
			tk.Finish()
		}
		for range 8 {
			select {
			case tk := <-done:
				if tk != (Ticket{}) {
					tk.Finish()
				}
			case <-time.After(10 * time.Second):
				t.Fatal("waiters did not return")
			}
		}
	}
}

// heldPolicy is a SeatPolicy holding the levels it names to fixed limits.
type heldPolicy struct {
	mu   sync.Mutex
	held map[string]int
}

func (p *heldPolicy) CurrentLimits(time.Time) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

func (p *heldPolicy) set(held map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = held
}

// A SeatPolicy is asked inside the adjustment: the demand is folded and
// the borrowing computed as without it (Limits.Borrowed), but the level it
// holds keeps the held limit, so nothing waiting is dispatched at the
// borrowing's limit in between; once the policy lets go, Replan puts the
// borrowing's limit in force and dispatches as the adjustment would have.
func TestSeatPolicyIsAskedInsideTheAdjustment(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := newFakeClock()
	policy := &heldPolicy{}
	c, err := New(mustDecode(t, borrowYAML), Options{ServerConcurrencyLimit: 25, Clock: clk, AdjustPeriod: ManualAdjustment, SeatPolicy: policy})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := levelLimits(c, "work").Current
	if b := levelLimits(c, "work").Borrowed; b != before {
		t.Errorf("with no decision, work's Borrowed = %d, want Current %d", b, before)
	}
	policy.set(map[string]int{"work": before})
	demand, release := fillWork(t, c)
	defer func() { release() }()
	clk.Step(BorrowingAdjustmentPeriod)
	c.AdjustBorrowing(clk.Now())
	work, other := levelLimits(c, "work"), levelLimits(c, "other")
	if work.Borrowed <= before {
		t.Errorf("the borrowing's limit for work = %d, want above the held %d (it has demand)", work.Borrowed, before)
	}
	if work.Current != before || work.DemandAverage != demand {
		t.Errorf("work held: current %d, demand %v; want %d (held) and %v (folded)", work.Current, work.DemandAverage, before, demand)
	}
	if other.Current != other.Borrowed {
		t.Errorf("other (not held): current %d, want the borrowing's %d", other.Current, other.Borrowed)
	}
	if got := c.Dump()[levelIndex(c, "work")].QueueSet.Executing; got != before {
		t.Errorf("executing while held = %d, want %d (nothing dispatched at the borrowing's limit)", got, before)
	}
	policy.set(nil)
	c.Replan(clk.Now())
	if got := levelLimits(c, "work"); got.Current != work.Borrowed || got.DemandAverage != demand {
		t.Errorf("after Replan: work's current %d, demand %v; want the borrowing's %d and the same demand %v", got.Current, got.DemandAverage, work.Borrowed, demand)
	}
	if got := c.Dump()[levelIndex(c, "work")].QueueSet.Executing; got != min(int(demand), work.Borrowed) {
		t.Errorf("executing after the release = %d, want %d", got, min(int(demand), work.Borrowed))
	}
	// Replan folds no demand: with the load gone for half a period, the
	// statistics are still the adjustment's.
	release()
	release = func() {}
	clk.Step(BorrowingAdjustmentPeriod / 2)
	c.Replan(clk.Now())
	if got := levelLimits(c, "work"); got.DemandAverage != demand || got.DemandSmoothed != work.DemandSmoothed {
		t.Errorf("after a Replan with no load: work's demand %v (smoothed %v), want the adjustment's %v (%v)", got.DemandAverage, got.DemandSmoothed, demand, work.DemandSmoothed)
	}
}

// A SeatPolicy's limit is kept within the level's bounds, and it cannot
// move the exempt level.
func TestSeatPolicyWithinBounds(t *testing.T) {
	clk := newFakeClock()
	policy := &heldPolicy{held: map[string]int{"work": 1000, "other": -3, "exempt": 7, "no-such-level": 4}}
	c, err := New(mustDecode(t, borrowYAML), Options{ServerConcurrencyLimit: 25, Clock: clk, AdjustPeriod: ManualAdjustment, SeatPolicy: policy})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	work, other, exempt := levelLimits(c, "work"), levelLimits(c, "other"), levelLimits(c, "exempt")
	if work.Current != work.Upper || other.Current != other.Lower {
		t.Errorf("work %d (upper %d), other %d (lower %d); want each at the bound its decision passed", work.Current, work.Upper, other.Current, other.Lower)
	}
	if exempt.Current != exempt.Borrowed {
		t.Errorf("exempt's current = %d, want the borrowing's %d (a policy does not move exempt)", exempt.Current, exempt.Borrowed)
	}
}

type limitCounter struct {
	NopObserver
	n atomic.Int64
}

func (o *limitCounter) LevelLimits(string, Limits) { o.n.Add(1) }

func TestAdjustTicker(t *testing.T) {
	defer goleak.VerifyNone(t)
	obs := &limitCounter{}
	c, err := New(nil, Options{ServerConcurrencyLimit: 100, AdjustPeriod: time.Millisecond, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	start := obs.n.Load() // the configuration's own adjustment
	waitFor(t, func() bool { return obs.n.Load() >= start+3*8 })
	c.Close()
	n := obs.n.Load()
	time.Sleep(10 * time.Millisecond)
	if obs.n.Load() != n {
		t.Errorf("adjustments continued after Close")
	}
	c.AdjustBorrowing(time.Now()) // no-op after Close
}

// TestStandaloneLimitsAddUpToAboutTheNominalSum pins what the
// StandaloneOptions doc says: the limits add up to about the levels'
// nominal sum, which rounding up makes more than the server at small
// totals (8 at 2 seats), not to at most the server.
func TestStandaloneLimitsAddUpToAboutTheNominalSum(t *testing.T) {
	for _, tc := range []struct{ server, want int }{{2, 8}, {600, 601}} {
		c, err := New(nil, StandaloneOptions(tc.server))
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		for _, l := range c.Limits() {
			sum += l.Current
		}
		c.Close()
		if sum != tc.want {
			t.Errorf("StandaloneOptions(%d): the limits add up to %d, want %d", tc.server, sum, tc.want)
		}
	}
}

// TestAdaptiveWithoutServerLimitIsOneError: a missing
// ServerConcurrencyLimit is reported once, not also as a Min above a Max
// of 0 (Max 0 means the missing limit).
func TestAdaptiveWithoutServerLimitIsOneError(t *testing.T) {
	_, err := New(nil, Options{Adaptive: &AdaptiveOptions{}})
	if err == nil || !strings.Contains(err.Error(), "ServerConcurrencyLimit=0") || strings.Contains(err.Error(), "must not exceed") {
		t.Errorf("New(Adaptive, no ServerConcurrencyLimit) = %v, want only the ServerConcurrencyLimit error", err)
	}
}

// TestDumpSeatsShowsThePlan: dump_seats shows the total and each level's
// borrowed and current limits, the policy's where it decided one.
func TestDumpSeatsShowsThePlan(t *testing.T) {
	policy := &heldPolicy{held: map[string]int{"work": 11}}
	c, err := New(mustDecode(t, borrowYAML), Options{ServerConcurrencyLimit: 25, Clock: newFakeClock(), AdjustPeriod: ManualAdjustment, SeatPolicy: policy})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := httptest.NewRecorder()
	c.DebugHandler().ServeHTTP(rec, httptest.NewRequest("GET", DebugPathSeats, nil))
	lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
	work := levelLimits(c, "work")
	want := []string{"Total, 25", "PriorityLevelName, Nominal, Lower, Upper, Borrowed, Current, DemandSmoothed"}
	if len(lines) < 2 || collapse(lines[0]) != want[0] || collapse(lines[1]) != want[1] {
		t.Fatalf("dump_seats header:\n%s", rec.Body.String())
	}
	row := fmt.Sprintf("work, %d, %d, %d, %d, 11, 0.00", work.Nominal, work.Lower, work.Upper, work.Borrowed)
	if !strings.Contains(collapse(rec.Body.String()), row) || work.Borrowed == 11 {
		t.Errorf("dump_seats does not show work's row %q (borrowed %d, held at 11):\n%s", row, work.Borrowed, rec.Body.String())
	}
}
