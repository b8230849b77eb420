package apf

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/fairslice/fairslice/fairqueue"
)

func newLimitedController(t *testing.T, serverCL int) (*Controller, *fakeClock, *FlowLimiter) {
	t.Helper()
	return newControllerWith(t, serverCL, NewFlowLimiter())
}

func newHoldingController(t *testing.T, serverCL int) (*Controller, *fakeClock, *FlowLimiter) {
	t.Helper()
	return newControllerWith(t, serverCL, NewHoldingFlowLimiter())
}

func newControllerWith(t *testing.T, serverCL int, fl *FlowLimiter) (*Controller, *fakeClock, *FlowLimiter) {
	t.Helper()
	clk := newFakeClock()
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

// capOneSeat caps tenant a at one seat of work and admits its first
// request.
func capOneSeat(t *testing.T, c *Controller, fl *FlowLimiter) (FlowKey, Ticket) {
	t.Helper()
	a := FlowKey{"work", "tenants", "a"}
	fl.SetCaps(map[FlowKey]float64{a: 1})
	first, err := c.Wait(context.Background(), tenant("a"), nil)
	if err != nil {
		t.Fatalf("a's first request: %v", err)
	}
	return a, first
}

// TestFlowLimiterCapsAtArrival: a capped flow is refused with
// concurrency-limit once its seats in use reach the cap, others are not,
// and the usage reports what was held and refused.
func TestFlowLimiterCapsAtArrival(t *testing.T) {
	c, clk, fl := newLimitedController(t, 4) // work: 3 seats
	a, first := capOneSeat(t, c, fl)
	ctx := context.Background()
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

// waitSeats calls Wait for user's request of seats in a goroutine.
func waitSeats(ctx context.Context, c *Controller, user string, seats uint64) chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		tk, err := c.Wait(ctx, tenant(user), func(*Classification, uint64) fairqueue.WorkEstimate {
			return fairqueue.WorkEstimate{InitialSeats: seats}
		})
		ch <- waitResult{tk, err}
	}()
	return ch
}

func held(c *Controller) int { return c.Dump()[levelIndex(c, "work")].Held }

// TestFlowLimiterHoldsOverCap: a capped flow's request over its cap
// waits outside the queue set, others are not held, it enters once the
// flow's seats drop, its wait counts from its arrival, and the usage
// counts its held seats in use.
func TestFlowLimiterHoldsOverCap(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, clk, fl := newHoldingController(t, 4) // work: 3 seats
	a, first := capOneSeat(t, c, fl)
	ctx := context.Background()
	second := waitSeats(ctx, c, "a", 1)
	waitFor(t, func() bool { return held(c) == 1 })
	other, err := c.Wait(ctx, tenant("b"), nil)
	if err != nil {
		t.Fatalf("b, not capped: %v", err)
	}
	if d := c.Dump()[levelIndex(c, "work")].QueueSet; d.Waiting != 0 || d.Executing != 2 {
		t.Errorf("work while a's second is held: %d waiting, %d executing in the queue set; want 0 and 2", d.Waiting, d.Executing)
	}
	clk.Step(2 * time.Second)
	first.Finish()
	r := recv(t, second, "a's held request")
	if r.err != nil {
		t.Fatalf("a's held request after its first finished: %v", r.err)
	}
	if got := r.t.WaitTime(); got != 2*time.Second {
		t.Errorf("held request's WaitTime() = %v, want 2s (from its arrival)", got)
	}
	r.t.Finish()
	other.Finish()
	if d := c.Dump()[levelIndex(c, "work")].QueueSet; d.Dispatched != 3 || d.Rejected != 0 || held(c) != 0 {
		t.Errorf("work's queue set: %d dispatched, %d rejected, %d held; want 3, 0, 0", d.Dispatched, d.Rejected, held(c))
	}
	want := []FlowUsage{
		{Flow: a, SeatSeconds: 2, InUseSeatSeconds: 4}, // 2 s executing, 2 s held
		{Flow: FlowKey{"work", "tenants", "b"}, SeatSeconds: 2, InUseSeatSeconds: 2},
	}
	if d := cmp.Diff(want, fl.TakeUsage(clk.Now())); d != "" {
		t.Errorf("TakeUsage (-want +got):\n%s", d)
	}
}

// TestFlowLimiterRefusesBeyondHold: a flow holds at most HandSize ×
// QueueLengthLimit requests (work: 2 × 2); the next, and a request whose
// own seats exceed the cap, are refused at once with concurrency-limit.
func TestFlowLimiterRefusesBeyondHold(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, _, fl := newHoldingController(t, 4)
	fl.SetCaps(map[FlowKey]float64{{"work", "tenants", "a"}: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := c.Wait(ctx, tenant("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var waiting []chan waitResult
	for i := range 4 {
		waiting = append(waiting, waitSeats(ctx, c, "a", 1))
		waitFor(t, func() bool { return held(c) == i+1 })
	}
	if _, err := c.Wait(ctx, tenant("a"), nil); rejectionReason(err) != fairqueue.ReasonConcurrencyLimit {
		t.Errorf("a's sixth request, its hold full: err = %v, want concurrency-limit", err)
	}
	if r := recv(t, waitSeats(ctx, c, "a", 2), "a's 2-seat request"); rejectionReason(r.err) != fairqueue.ReasonConcurrencyLimit {
		t.Errorf("a's request of 2 seats over its cap of 1: err = %v, want concurrency-limit", r.err)
	}
	cancel()
	for _, w := range waiting {
		if r := recv(t, w, "held request"); rejectionReason(r.err) != fairqueue.ReasonTimeOut {
			t.Errorf("held request after its context ended: err = %v, want time-out", r.err)
		}
	}
	first.Finish()
	if held(c) != 0 {
		t.Errorf("held after every waiter gave up = %d, want 0", held(c))
	}
}

// TestFlowLimiterSetCapsSettlesHeld: SetCaps lets held requests through
// before it returns when it raises or removes their cap, and refuses
// those whose seats exceed a lowered cap.
func TestFlowLimiterSetCapsSettlesHeld(t *testing.T) {
	defer goleak.VerifyNone(t)
	a := FlowKey{"work", "tenants", "a"}
	for _, tt := range []struct {
		name  string
		caps  map[FlowKey]float64
		admit bool
	}{
		{"raise", map[FlowKey]float64{a: 3}, true},
		{"remove", nil, true},
		{"lower below its seats", map[FlowKey]float64{a: 1}, false},
	} {
		c, _, fl := newHoldingController(t, 4)
		fl.SetCaps(map[FlowKey]float64{a: 2})
		ctx := context.Background()
		first, err := c.Wait(ctx, tenant("a"), nil)
		if err != nil {
			t.Fatal(err)
		}
		w := waitSeats(ctx, c, "a", 2)
		waitFor(t, func() bool { return held(c) == 1 })
		fl.SetCaps(tt.caps)
		if d := c.Dump()[levelIndex(c, "work")]; d.Held != 0 || (d.QueueSet.Executing == 2) != tt.admit {
			t.Errorf("%s: after SetCaps, %d held, %d executing; want 0 held, the held one executing: %v", tt.name, d.Held, d.QueueSet.Executing, tt.admit)
		}
		r := recv(t, w, "held request")
		switch {
		case tt.admit && r.err != nil:
			t.Errorf("%s: held request: %v, want admitted", tt.name, r.err)
		case tt.admit:
			r.t.Finish()
		case rejectionReason(r.err) != fairqueue.ReasonConcurrencyLimit:
			t.Errorf("%s: held request: %v, want concurrency-limit", tt.name, r.err)
		}
		first.Finish()
		c.Close()
	}
}

// enqueueRecorder records the users whose requests enter a queue, in
// order.
type enqueueRecorder struct {
	NopObserver
	mu    sync.Mutex
	users []string
}

func (o *enqueueRecorder) Enqueued(ev RequestEvent, _ int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.users = append(o.users, ev.Request.User.Name)
}

func (o *enqueueRecorder) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	u := o.users
	o.users = nil
	return u
}

// TestFlowLimiterSetCapsReleasesInArrivalOrder: the held requests that
// SetCaps lets through enter the queue set in the order they arrived,
// across flows, whatever the order of the limiter's flows.
func TestFlowLimiterSetCapsReleasesInArrivalOrder(t *testing.T) {
	obs := &enqueueRecorder{}
	fl := NewHoldingFlowLimiter()
	c, err := New(mustDecode(t, testConfigYAML), Options{ServerConcurrencyLimit: 100, Clock: newFakeClock(), FlowLimiter: fl, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	users := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	caps := map[FlowKey]float64{}
	for _, u := range users {
		caps[FlowKey{"work", "tenants", u}] = 1
	}
	fl.SetCaps(caps)
	ctx := context.Background()
	for _, u := range users {
		tk, err := c.Wait(ctx, tenant(u), nil)
		if err != nil {
			t.Fatalf("%s's first request: %v", u, err)
		}
		defer tk.Finish()
	}
	heldOrder := append(append([]string{}, users...), "c", "a") // two flows hold a second request
	var waiters []chan waitResult
	for i, u := range heldOrder {
		waiters = append(waiters, waitSeats(ctx, c, u, 1))
		waitFor(t, func() bool { return held(c) == i+1 })
	}
	obs.take()
	fl.SetCaps(nil)
	if d := cmp.Diff(heldOrder, obs.take()); d != "" {
		t.Errorf("held requests entering the queue set after SetCaps(nil) (-arrival order +entered):\n%s", d)
	}
	for _, w := range waiters {
		r := recv(t, w, "held request")
		if r.err != nil {
			t.Fatalf("held request: %v", r.err)
		}
		r.t.Finish()
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
	results := make(chan waitResult, 2)
	for range 2 {
		go func() {
			tk, err := c.Wait(ctx, tenant("b"), nil)
			results <- waitResult{tk, err}
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
