package apf

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/fairqueue"
)

func newLimitedController(t *testing.T, serverCL int) (*Controller, *fakeClock, *FlowLimiter) {
	t.Helper()
	clk := newFakeClock()
	fl := NewFlowLimiter()
	c, err := New(mustDecode(t, testConfigYAML), Options{ServerConcurrencyLimit: serverCL, Clock: clk, FlowLimiter: fl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, clk, fl
}

func rejectionReason(err error) fairqueue.Reason {
	var rej *RejectedError
	if errors.As(err, &rej) {
		return rej.Reason
	}
	return ""
}

// TestFlowLimiterCapsAtArrival: a capped flow is refused with
// concurrency-limit once its seats in use reach the cap, others are not,
// and the usage reports what was held and refused.
func TestFlowLimiterCapsAtArrival(t *testing.T) {
	c, clk, fl := newLimitedController(t, 4) // work: 3 seats
	a := FlowKey{"work", "tenants", "a"}
	fl.SetCaps(map[FlowKey]float64{a: 1})
	ctx := context.Background()
	first, err := c.Wait(ctx, tenant("a"), nil)
	if err != nil {
		t.Fatalf("a's first request: %v", err)
	}
	if _, err := c.Wait(ctx, tenant("a"), nil); rejectionReason(err) != fairqueue.ReasonConcurrencyLimit {
		t.Fatalf("a's second request over its cap of 1: err = %v, want concurrency-limit", err)
	}
	other, err := c.Wait(ctx, tenant("b"), nil)
	if err != nil {
		t.Fatalf("b, not capped: %v", err)
	}
	clk.Step(2 * time.Second)
	first.Finish()
	other.Finish()
	third, err := c.Wait(ctx, tenant("a"), nil)
	if err != nil {
		t.Fatalf("a after its first finished: %v", err)
	}
	third.Finish()
	// The refused request never reached the queue set.
	if d := c.Dump()[levelIndex(c, "work")].QueueSet; d.Dispatched != 3 || d.Rejected != 0 {
		t.Errorf("work's queue set: %d dispatched, %d rejected; want 3 and 0", d.Dispatched, d.Rejected)
	}
	want := []FlowUsage{
		{Flow: a, SeatSeconds: 2, InUseSeatSeconds: 2, RefusedSeatSeconds: 1}, // refused 1 seat, a's mean execution (2+0)/2 s
		{Flow: FlowKey{"work", "tenants", "b"}, SeatSeconds: 2, InUseSeatSeconds: 2},
	}
	if d := cmp.Diff(want, fl.TakeUsage(clk.Now())); d != "" {
		t.Errorf("TakeUsage (-want +got):\n%s", d)
	}
	if got := fl.TakeUsage(clk.Now()); got != nil {
		t.Errorf("TakeUsage again = %v, want nothing new", got)
	}
}

// TestFlowLimiterRefusesQueuedOverCap: requests queued before their
// flow's cap came down are refused when dispatched over it, and their
// seats go to the next request at once.
func TestFlowLimiterRefusesQueuedOverCap(t *testing.T) {
	c, _, fl := newLimitedController(t, 4)
	ctx := context.Background()
	var running []Ticket
	for range 3 {
		tk, err := c.Wait(ctx, tenant("a"), nil)
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, tk)
	}
	type result struct {
		t   Ticket
		err error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			tk, err := c.Wait(ctx, tenant("b"), nil)
			results <- result{tk, err}
		}()
	}
	waitFor(t, func() bool { return c.Dump()[levelIndex(c, "work")].QueueSet.Waiting == 2 })
	fl.SetCaps(map[FlowKey]float64{{"work", "tenants", "b"}: 1})
	for _, tk := range running {
		tk.Finish()
	}
	var admitted, refused int
	for range 2 {
		r := recv(t, results, "queued request")
		switch {
		case r.err == nil:
			admitted++
			defer r.t.Finish()
		case rejectionReason(r.err) == fairqueue.ReasonConcurrencyLimit:
			refused++
		default:
			t.Fatalf("queued request: %v", r.err)
		}
	}
	if admitted != 1 || refused != 1 {
		t.Errorf("b's two queued requests under a cap of 1: %d admitted, %d refused; want 1 and 1", admitted, refused)
	}
	if d := c.Dump()[levelIndex(c, "work")].QueueSet; d.Executing != 1 || d.Waiting != 0 {
		t.Errorf("work after the refusal: %d executing, %d waiting; want 1 and 0", d.Executing, d.Waiting)
	}
}
