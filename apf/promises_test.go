package apf

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/google/go-cmp/cmp"
)

func globalDefault(user string) *Request {
	return &Request{
		User: User{Name: user, Groups: []string{"system:authenticated"}},
		Info: RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1",
			Namespace: "default", Resource: "configmaps", Name: "x", Path: "/api/v1/namespaces/default/configmaps/x"},
	}
}

// TestAdaptivePressureEndsWithItsWindow: a window in which a request
// waited lets the total grow, but the next windows, where none waits,
// do not: the pressure is the window's, not remembered.
func TestAdaptivePressureEndsWithItsWindow(t *testing.T) {
	const work = 20 * time.Millisecond
	clk := newFakeClock()
	// A floor of 40 (global-default has 5 seats there), and slow start
	// after the probe: a pressed window multiplies the total by 4.
	c, err := New(nil, Options{ServerConcurrencyLimit: 600, Clock: clk, Adaptive: &AdaptiveOptions{Min: 40}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sequential := func(n int) {
		for range n {
			tk, err := c.Wait(ctx, globalDefault("alice"), nil)
			if err != nil {
				t.Fatal(err)
			}
			clk.Step(work)
			tk.Finish()
		}
	}
	sequential(60) // the probe, then windows with no pressure
	before := c.Total()
	// One window in which a request waits: one more at once than
	// global-default's seats.
	seats := levelLimits(c, "global-default").Current
	var wg sync.WaitGroup
	tks := make(chan Ticket, seats+1)
	for i := range seats + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := c.Wait(ctx, globalDefault(string(rune('a'+i))), nil)
			if err == nil {
				tks <- tk
			}
		}()
	}
	waitFor(t, func() bool { return c.Dump()[levelIndex(c, "global-default")].QueueSet.Waiting == 1 })
	clk.Step(work)
	for range seats + 1 {
		select {
		case tk := <-tks:
			tk.Finish()
		case <-ctx.Done():
			t.Fatal("the burst's requests did not all dispatch")
		}
	}
	wg.Wait()
	sequential(10)
	pressed := c.Total()
	if pressed <= before {
		t.Fatalf("total %d before the burst, %d after its window; want it to grow (slow start)", before, pressed)
	}
	sequential(100) // 2 s of windows in which nothing waits
	t.Logf("totals: before %d, pressed %d, after %d", before, pressed, c.Total())
	if after := c.Total(); after != pressed {
		t.Errorf("total %d before the burst, %d after its window, %d after 2 s with nothing waiting; want it to stay at %d", before, pressed, after, pressed)
	}
}

// TestGoAwayNotOnHTTP1: GOAWAY is an HTTP/2 frame; a targeted flow's
// request over HTTP/1.1 gets no Connection: close (which would close a
// keep-alive connection other requests may be using).
func TestGoAwayNotOnHTTP1(t *testing.T) {
	c, _ := newTestController(t, 4)
	g, err := NewTargetedGoAway(time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Classify(tenant("alice"))
	g.Target(FlowKey{PriorityLevel: cl.PriorityLevel, FlowSchema: cl.FlowSchema, Distinguisher: cl.Distinguisher}, true)
	h, err := c.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), HandlerOptions{User: RequestHeaderUser, GoAway: g})
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []struct {
		major, minor int
		close        bool
	}{{1, 1, false}, {2, 0, true}} {
		r := httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods/p", nil)
		r.Proto, r.ProtoMajor, r.ProtoMinor = fmt.Sprintf("HTTP/%d.%d", proto.major, proto.minor), proto.major, proto.minor
		r.Header.Set(HeaderRemoteUser, "alice")
		r.Header.Add(HeaderRemoteGroup, "tenants")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if got := rec.Header().Get("Connection") == "close"; got != proto.close {
			t.Errorf("HTTP/%d.%d: Connection: close = %v, want %v", proto.major, proto.minor, got, proto.close)
		}
	}
}

// TestSketchLowMeanRoundsTheKeptCountUp: the trimmed mean keeps the
// ⌈0.9·n⌉ fastest executions; with 15, 14 of them (0.9·15 = 13.5).
func TestSketchLowMeanRoundsTheKeptCountUp(t *testing.T) {
	const ms = time.Millisecond
	var s latencySketch
	want := 0.0
	for i := 1; i <= 15; i++ {
		d := time.Duration(i) * 10 * ms
		s.add(d)
		if i <= 14 {
			want += float64(sketchValue(sketchBucket(d)))
		}
	}
	if got := s.lowMean(AdaptiveLatencyKept); got != time.Duration(want/14) {
		t.Errorf("lowMean(0.9) of 10, 20, ..., 150 ms = %v, want %v (the mean of the fastest 14)", got, time.Duration(want/14))
	}
}

// TestFlowLimiterCapRoundsToTheNearestSeat: a cap of 2.5 seats lets its
// flow hold 3 (rounded half up), not 2, and refuses the 4th.
func TestFlowLimiterCapRoundsToTheNearestSeat(t *testing.T) {
	c, _, fl := newLimitedController(t, 20)
	a := FlowKey{"work", "tenants", "a"}
	fl.SetCaps(map[FlowKey]float64{a: 2.5})
	ctx := context.Background()
	for i := range 3 {
		tk, err := c.Wait(ctx, tenant("a"), nil)
		if err != nil {
			t.Fatalf("a's request %d of 3 under a cap of 2.5: %v", i+1, err)
		}
		defer tk.Finish()
	}
	if _, err := c.Wait(ctx, tenant("a"), nil); rejectionReason(err) != fairqueue.ReasonConcurrencyLimit {
		t.Errorf("a's 4th request under a cap of 2.5: err = %v, want concurrency-limit", err)
	}
}

// TestFlowLimiterReportsFlowsStillExecuting: a flow whose requests all
// outlast the period (none finished) is still in TakeUsage, with the
// seats it held, so a fleet can cap or target it.
func TestFlowLimiterReportsFlowsStillExecuting(t *testing.T) {
	c, clk, fl := newLimitedController(t, 20)
	tk, err := c.Wait(context.Background(), tenant("long"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Finish()
	fl.TakeUsage(clk.Now())
	clk.Step(2 * time.Second)
	want := []FlowUsage{{Flow: FlowKey{"work", "tenants", "long"}, InUseSeatSeconds: 2}}
	if d := cmp.Diff(want, fl.TakeUsage(clk.Now())); d != "" {
		t.Errorf("TakeUsage with a request executing for the whole period (-want +got):\n%s", d)
	}
}

// TestReconfigureRunsAnAdjustment: a configuration change folds in the
// demand measured since the last adjustment and re-divides, as upstream
// does on every configuration change.
func TestReconfigureRunsAnAdjustment(t *testing.T) {
	clk := newFakeClock()
	c, err := New(mustDecode(t, borrowYAML), Options{ServerConcurrencyLimit: 25, Clock: clk, AdjustPeriod: ManualAdjustment})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	demand, release := fillWork(t, c)
	defer release()
	clk.Step(BorrowingAdjustmentPeriod)
	if err := c.Reconfigure(mustDecode(t, borrowYAML)); err != nil {
		t.Fatal(err)
	}
	if got := levelLimits(c, "work"); got.DemandAverage != demand {
		t.Errorf("work's demand after Reconfigure = %v, want the period's %v folded in", got.DemandAverage, demand)
	}
}

// TestAdaptiveRejectionPresses: a request the queue set rejects (here a
// level that rejects instead of queuing) presses the window as a waiting
// one does: in slow start the total grows.
func TestAdaptiveRejectionPresses(t *testing.T) {
	const work = 20 * time.Millisecond
	cfg := flowschema.DefaultConfig()
	for i := range cfg.PriorityLevels {
		if pl := &cfg.PriorityLevels[i]; pl.Name == "global-default" {
			pl.Spec.Limited.LimitResponse = flowschema.LimitResponse{Type: flowschema.LimitResponseReject}
		}
	}
	clk := newFakeClock()
	c, err := New(cfg, Options{ServerConcurrencyLimit: 600, Clock: clk, Adaptive: &AdaptiveOptions{Min: 40}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	sequential := func(n int) {
		for range n {
			tk, err := c.Wait(ctx, globalDefault("alice"), nil)
			if err != nil {
				t.Fatal(err)
			}
			clk.Step(work)
			tk.Finish()
		}
	}
	sequential(60)
	before := c.Total()
	seats := levelLimits(c, "global-default").Current
	var held []Ticket
	for i := range seats + 1 {
		tk, err := c.Wait(ctx, globalDefault(string(rune('a'+i))), nil)
		if err == nil {
			held = append(held, tk)
		} else if rejectionReason(err) == "" {
			t.Fatal(err)
		}
	}
	if len(held) != seats {
		t.Fatalf("%d of %d requests admitted on %d seats; want one rejected", len(held), seats+1, seats)
	}
	clk.Step(work)
	for _, tk := range held {
		tk.Finish()
	}
	sequential(10)
	if after := c.Total(); after <= before {
		t.Errorf("total %d before a window with a rejection, %d after; want it to grow", before, after)
	}
}

// TestRejectedErrorNamesTheContextsError: a time-out's error says why
// the wait ended; others say nothing more.
func TestRejectedErrorNamesTheContextsError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{context.DeadlineExceeded, `apf: request rejected by priority level "p": time-out: context deadline exceeded`},
		{nil, `apf: request rejected by priority level "p": queue-full`},
	} {
		reason := fairqueue.ReasonTimeOut
		if tc.err == nil {
			reason = fairqueue.ReasonQueueFull
		}
		e := &RejectedError{Classification: Classification{PriorityLevel: "p"}, Reason: reason, Err: tc.err}
		if got := e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// TestMaybeReapKeepsLiveLevels: a level is dropped only while it is
// quiescing, idle and still the controller's: not a live idle one, not a
// quiescing busy one.
func TestMaybeReapKeepsLiveLevels(t *testing.T) {
	c, _ := newTestController(t, 4)
	c.mu.Lock()
	work := c.levels["work"]
	c.mu.Unlock()
	kept := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.levels["work"] == work
	}
	c.maybeReap(work) // live and idle
	if !kept() {
		t.Fatal("maybeReap dropped work, live and idle")
	}
	tk, err := c.Wait(context.Background(), tenant("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Finish()
	work.mu.Lock()
	work.quiescing = true
	work.mu.Unlock()
	c.maybeReap(work) // quiescing and busy
	if !kept() {
		t.Fatal("maybeReap dropped work, quiescing with a request executing")
	}
}

// TestFlowLimiterAndAdaptiveTogether: with both features the request path
// runs both hooks, and a request within its cap is admitted.
func TestFlowLimiterAndAdaptiveTogether(t *testing.T) {
	fl := NewFlowLimiter()
	// Min 245, the bootstrap shares' sum: global-default has seats.
	clk := newFakeClock()
	c, err := New(nil, Options{ServerConcurrencyLimit: 600, Clock: clk, FlowLimiter: fl, Adaptive: &AdaptiveOptions{Min: 245}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tk, err := c.Wait(ctx, globalDefault("alice"), nil)
	if err != nil {
		t.Fatalf("Wait with a FlowLimiter and Adaptive: %v", err)
	}
	clk.Step(time.Second)
	tk.Finish()
	if u := fl.TakeUsage(clk.Now()); len(u) != 1 || u[0].SeatSeconds != 1 {
		t.Errorf("TakeUsage = %v, want alice's one seat-second", u)
	}
}

// TestAdaptiveSamplesFromTheWindowsStart: an execution dispatched at the
// instant a window starts is that window's sample; one dispatched before
// is not.
func TestAdaptiveSamplesFromTheWindowsStart(t *testing.T) {
	clk := newFakeClock()
	c, err := New(nil, Options{ServerConcurrencyLimit: 600, Clock: clk, Adaptive: &AdaptiveOptions{Min: 245}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.adapt.next.Store(clk.Now().Add(time.Hour).UnixNano()) // no revision consumes the window
	samples := func() int {
		c.mu.Lock()
		lv := c.levels["global-default"]
		c.mu.Unlock()
		lv.mu.Lock()
		defer lv.mu.Unlock()
		return lv.win.lat.n
	}
	for _, tc := range []struct {
		from time.Duration // the window's start, from the dispatch
		want int
	}{{0, 1}, {time.Nanosecond, 0}} {
		n := samples()
		c.adapt.countFrom.Store(clk.Now().Add(tc.from).UnixNano())
		tk, err := c.Wait(context.Background(), globalDefault("alice"), nil)
		if err != nil {
			t.Fatal(err)
		}
		clk.Step(time.Millisecond)
		tk.Finish()
		if got := samples() - n; got != tc.want {
			t.Errorf("window starting %v after the dispatch: %d samples, want %d", tc.from, got, tc.want)
		}
	}
}
