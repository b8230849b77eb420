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
