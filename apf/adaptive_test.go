package apf

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// drawTraceCase draws a random configuration and request sequence.
func drawTraceCase(t *rapid.T) traceCase {
	return randomTraceCase(rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 26)))
}

// With the total pinned (Min = Max = ServerConcurrencyLimit) the adaptive
// machinery runs (sampling, revisions, probes) but may not move the total,
// so every decision must be the static controller's.
func TestAdaptivePinnedDecidesAsStatic(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tc := drawTraceCase(rt)
		static := runTrace(rt, tc, Options{})
		pinned := runTrace(rt, tc, Options{Adaptive: &AdaptiveOptions{Min: tc.ServerCL, Max: tc.ServerCL, Interval: 50 * time.Millisecond, MinSamples: 1}})
		if diff := cmp.Diff(static, pinned); diff != "" {
			rt.Fatalf("decisions with the total pinned differ from static ones (-static +pinned):\n%s", diff)
		}
	})
}

// drawAdaptive draws adaptive options with bounds around the case's
// server concurrency, and fast revisions so that many run.
func drawAdaptive(rt *rapid.T, serverCL int) *AdaptiveOptions {
	lo := rapid.IntRange(0, serverCL).Draw(rt, "min")
	return &AdaptiveOptions{
		Min: lo, Max: rapid.IntRange(max(lo, 1), 3*serverCL).Draw(rt, "max"),
		Interval:      time.Duration(rapid.IntRange(1, 500).Draw(rt, "intervalMs")) * time.Millisecond,
		MinSamples:    rapid.IntRange(1, 20).Draw(rt, "minSamples"),
		Tolerance:     rapid.Float64Range(1, 2).Draw(rt, "tolerance"),
		ProbeInterval: time.Duration(rapid.IntRange(-1, 20).Draw(rt, "probeS")) * time.Second,
	}
}

// The total never leaves [max(1, Min), Max], and the mandatory catch-all
// level always has a seat.
func TestAdaptiveTotalWithinBounds(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tc := drawTraceCase(rt)
		a := drawAdaptive(rt, tc.ServerCL)
		lo, hi := max(1, a.Min), a.Max
		seen := map[int]bool{}
		runTraceWith(rt, tc, Options{Adaptive: a}, func(c *Controller, step int) {
			total := c.Total()
			seen[total] = true
			if total < lo || total > hi {
				rt.Fatalf("step %d: Total() = %d, want within [%d, %d]", step, total, lo, hi)
			}
			if l := levelLimits(c, "catch-all"); l.Nominal < 1 {
				rt.Fatalf("step %d: catch-all's nominal limit at total %d = %d, want at least 1", step, total, l.Nominal)
			}
		})
		rt.Logf("totals seen: %v", seen)
	})
}

// Exempt requests are dispatched at once, never queued or rejected,
// whatever the adaptive total does.
func TestAdaptiveExemptNeverLimited(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tc := drawTraceCase(rt)
		for i := range tc.Exempt { // more exempt requests than usual
			tc.Exempt[i] = tc.Exempt[i] || i%3 == 0
		}
		want := 0
		for _, e := range tc.Exempt {
			if e {
				want++
			}
		}
		tr := runTrace(rt, tc, Options{Adaptive: drawAdaptive(rt, tc.ServerCL)})
		_, section, _ := strings.Cut(tr, "== exempt\n")
		section, _, _ = strings.Cut(section, "\n== ")
		got := 0
		for _, line := range strings.Split(section, "\n") {
			switch {
			case strings.HasPrefix(line, "dispatch "):
				got++
				if !strings.Contains(line, " wait=0s ") {
					rt.Fatalf("exempt request waited: %s", line)
				}
			case strings.HasPrefix(line, "reject "), strings.HasPrefix(line, "enqueue "):
				rt.Fatalf("exempt request limited: %s", line)
			}
		}
		if got != want {
			rt.Fatalf("exempt dispatches = %d, want %d (every exempt request)", got, want)
		}
	})
}

func TestAdaptiveOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		opts AdaptiveOptions
		want []string // every fragment must appear
	}{
		{AdaptiveOptions{Min: -1, Max: -2}, []string{"Options.Adaptive.Min=-1 must not be negative", "Options.Adaptive.Max=-2 must not be negative"}},
		{AdaptiveOptions{Min: 11}, []string{"Options.Adaptive.Min=11 must not exceed Max (10)"}},
		{AdaptiveOptions{Min: 5, Max: 4}, []string{"Options.Adaptive.Min=5 must not exceed Max (4)"}},
		{AdaptiveOptions{Interval: -1, MinSamples: -1, Tolerance: 0.5, SchedulerLatencyTarget: -1}, []string{
			"Options.Adaptive.Interval=-1ns must not be negative", "Options.Adaptive.MinSamples=-1 must not be negative",
			"Options.Adaptive.Tolerance=0.5 must be at least 1", "Options.Adaptive.SchedulerLatencyTarget=-1ns must not be negative"}},
	} {
		opts := tc.opts
		_, err := New(nil, Options{ServerConcurrencyLimit: 10, Adaptive: &opts})
		if err == nil {
			t.Errorf("New(Adaptive: %+v) = nil error, want %q", tc.opts, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New(Adaptive: %+v) = %q, want it to contain %q", tc.opts, err, w)
			}
		}
	}
	for _, ok := range []AdaptiveOptions{{}, {Min: 10}, {Min: 3, Max: 50, Tolerance: 1, ProbeInterval: -1}} {
		c, err := New(nil, Options{ServerConcurrencyLimit: 10, Adaptive: &ok})
		if err != nil {
			t.Errorf("New(Adaptive: %+v) = %v, want no error", ok, err)
			continue
		}
		c.Close()
	}
}

// The scheduler-latency signal shrinks the total when its p99 is over the
// target, through the controller (its reader replaced by a fake).
func TestAdaptiveSchedulerSignal(t *testing.T) {
	clk := newFakeClock()
	c, err := New(mustDecode(t, testConfigYAML), Options{ServerConcurrencyLimit: 64, Clock: clk, AdjustPeriod: ManualAdjustment,
		Adaptive: &AdaptiveOptions{Min: 2, SchedulerLatencyTarget: time.Millisecond, MinSamples: 1, ProbeInterval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p99 := time.Duration(0)
	c.adapt.sched = func() time.Duration { return p99 }
	// One request per 100 ms window, each taking 10 ms, one flow kept
	// waiting so that the level is short of seats.
	step := func() {
		tk, err := c.Wait(t.Context(), tenant("u"), nil)
		if err != nil {
			t.Fatal(err)
		}
		clk.Step(10 * time.Millisecond)
		c.mu.Lock()
		c.levels["work"].mu.Lock()
		c.levels["work"].win.pressed = true
		c.levels["work"].mu.Unlock()
		c.mu.Unlock()
		tk.Finish()
		clk.Step(90 * time.Millisecond)
	}
	for range 8 {
		step()
	}
	grown := c.Total()
	if grown <= 2 {
		t.Fatalf("Total() after slow start = %d, want above the floor 2", grown)
	}
	p99 = 4 * time.Millisecond // 4x the target: halve
	for range 2 {
		step()
	}
	if got := c.Total(); got >= grown {
		t.Errorf("Total() with scheduler p99 4x its target = %d, want below %d", got, grown)
	}
}

// A request whose client gives up (a timeout, a closed connection) ends
// its execution early; the middleware finishes it as abandoned, so that
// the short execution does not become the baseline latency. Before, a
// server whose clients timed out at the head of APF's queues took their
// cut-short executions as the no-load latency, saw every real execution
// as far above it, and shrank the total to its floor.
func TestAdaptiveIgnoresAbandonedExecutions(t *testing.T) {
	const work = 20 * time.Millisecond
	clk := newFakeClock()
	// Min 245, the bootstrap shares' sum: every level has a seat, so
	// requests one at a time never queue.
	c, err := New(nil, Options{ServerConcurrencyLimit: 600, Clock: clk, Adaptive: &AdaptiveOptions{Min: 245}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	abandon := false
	var serveN func(int)
	h, err := c.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if abandon {
			clk.Step(time.Millisecond)
			r.Context().Value(cancelKey{}).(context.CancelFunc)()
			return
		}
		clk.Step(work)
	}), HandlerOptions{User: RequestHeaderUser})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(n int) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			serveN(n)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			panic("requests one at a time did not finish within 10 s")
		}
	}
	serveN = func(n int) {
		for range n {
			ctx, cancel := context.WithCancel(context.Background())
			ctx = context.WithValue(ctx, cancelKey{}, cancel)
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/v1/namespaces/default/pods", nil)
			r.Header.Set("X-Remote-User", "alice")
			h.ServeHTTP(httptest.NewRecorder(), r)
			cancel()
		}
	}
	baseline := func() time.Duration { // as Dump reports it
		for _, d := range c.Dump() {
			if d.Name == "global-default" {
				return d.Baseline
			}
		}
		t.Fatal("Dump has no level global-default")
		return 0
	}
	if got := baseline(); got != 0 {
		t.Fatalf("baseline before the probe = %v, want 0", got)
	}
	// work, to the sketch's resolution
	want := sketchValue(sketchBucket(work))
	serve(50) // the probe: 1 s
	if got := baseline(); got != want {
		t.Fatalf("baseline after the probe = %v, want %v", got, want)
	}
	abandon = true
	serve(500) // 0.5 s of executions cut short at 1 ms
	abandon = false
	serve(50)
	if got := baseline(); got != want {
		t.Errorf("baseline after abandoned requests = %v, want %v (abandoned executions are no samples)", got, want)
	}
}

type cancelKey struct{}
