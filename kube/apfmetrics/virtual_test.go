package apfmetrics

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

// manualClock is a fairqueue.Clock that moves only when told; its timers
// never fire (the scenario ends before any wait limit).
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

type nopTimer struct{}

func (nopTimer) Stop() bool { return true }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(time.Duration, func()) fairqueue.Timer { return nopTimer{} }

func (c *manualClock) step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// seats is a WorkFunc of n initial seats.
func seats(n uint64) apf.WorkFunc {
	return func(*apf.Classification, uint64) fairqueue.WorkEstimate {
		return fairqueue.WorkEstimate{InitialSeats: n}
	}
}

// TestVirtualTimeMetrics drives level "work" (3 seats, one queue) on a
// manual clock: a1 and a2 (1 seat each) dispatch at t0, w (2 seats) does
// not fit (no accommodation) and waits; at t0+1s a1 finishes and w is
// dispatched.
func TestVirtualTimeMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	clk := &manualClock{now: time.Unix(1_800_000_000, 0)}
	m, err := NewWithClock(reg, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := flowschema.Decode([]byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	c, err := apf.New(cfg, apf.Options{ServerConcurrencyLimit: 4, Observer: m, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m.Attach(c)
	ctx := context.Background()
	a1, err := c.Wait(ctx, req("a"), seats(1))
	if err != nil {
		t.Fatal(err)
	}
	a2, err := c.Wait(ctx, req("a"), seats(1))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan apf.Ticket, 1)
	go func() {
		tk, err := c.Wait(ctx, req("w"), seats(2))
		if err != nil {
			t.Error(err)
		}
		done <- tk
	}()
	inqueue := m.inqueueRequests.WithLabelValues("work", "tenants")
	waitFor(t, func() bool { return testutil.ToFloat64(inqueue) == 1 })
	clk.step(time.Second)
	a1.Finish()
	var w apf.Ticket
	select {
	case w = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("w not dispatched within 10s")
	}
	// R grew at min(4 seats requested, 3)/1 queue = 3 per second: R = 3.
	// The queue's next dispatch R was 2 × 3 ms (a1, a2 at G = 3 ms each),
	// and a1's 1 s of service corrects it by +(1 s − 3 ms): S = 1.003.
	// Discounted by a2's 1 seat × G: 1.000.
	want := `
# HELP apiserver_flowcontrol_current_r R(time of last change)
# TYPE apiserver_flowcontrol_current_r gauge
apiserver_flowcontrol_current_r{priority_level="catch-all"} 0
apiserver_flowcontrol_current_r{priority_level="exempt"} 0
apiserver_flowcontrol_current_r{priority_level="work"} 3
# HELP apiserver_flowcontrol_dispatch_r R(time of last dispatch)
# TYPE apiserver_flowcontrol_dispatch_r gauge
apiserver_flowcontrol_dispatch_r{priority_level="work"} 3
# HELP apiserver_flowcontrol_epoch_advance_total Number of times the queueset's progress meter jumped backward
# TYPE apiserver_flowcontrol_epoch_advance_total counter
apiserver_flowcontrol_epoch_advance_total{priority_level="catch-all",success="true"} 0
apiserver_flowcontrol_epoch_advance_total{priority_level="exempt",success="true"} 0
apiserver_flowcontrol_epoch_advance_total{priority_level="work",success="true"} 0
# HELP apiserver_flowcontrol_latest_s S(most recently dispatched request)
# TYPE apiserver_flowcontrol_latest_s gauge
apiserver_flowcontrol_latest_s{priority_level="work"} 1.003
# HELP apiserver_flowcontrol_next_discounted_s_bounds min and max, over queues, of S(oldest waiting request in queue) - estimated work in progress
# TYPE apiserver_flowcontrol_next_discounted_s_bounds gauge
apiserver_flowcontrol_next_discounted_s_bounds{bound="max",priority_level="work"} 1
apiserver_flowcontrol_next_discounted_s_bounds{bound="min",priority_level="work"} 1
# HELP apiserver_flowcontrol_next_s_bounds min and max, over queues, of S(oldest waiting request in queue)
# TYPE apiserver_flowcontrol_next_s_bounds gauge
apiserver_flowcontrol_next_s_bounds{bound="max",priority_level="work"} 1.003
apiserver_flowcontrol_next_s_bounds{bound="min",priority_level="work"} 1.003
# HELP apiserver_flowcontrol_request_dispatch_no_accommodation_total Number of times a dispatch attempt resulted in a non accommodation due to lack of available seats
# TYPE apiserver_flowcontrol_request_dispatch_no_accommodation_total counter
apiserver_flowcontrol_request_dispatch_no_accommodation_total{flow_schema="tenants",priority_level="work"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "apiserver_flowcontrol_current_r",
		"apiserver_flowcontrol_dispatch_r", "apiserver_flowcontrol_latest_s", "apiserver_flowcontrol_next_s_bounds",
		"apiserver_flowcontrol_next_discounted_s_bounds", "apiserver_flowcontrol_request_dispatch_no_accommodation_total",
		"apiserver_flowcontrol_epoch_advance_total"); err != nil {
		t.Error(err)
	}
	// One more second with a2 and w executing. Over [t0, t0+1s] 2 of 3
	// seats and 2 of 3 requests executed, 1 of 1 queue place was taken and
	// the demand was (2+2)/3; over [t0+1s, t0+2s] 3/3 seats, 2/3 requests,
	// 0/1 waiting, demand 3/3. Each bucket counts nanoseconds; each sum is
	// the integral of the ratio in nanoseconds.
	clk.step(time.Second)
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		buckets map[float64]uint64 // cumulative, only those that change
		sum     float64
	}{
		{"priority_level_seat_utilization", map[string]string{"phase": "executing", "priority_level": "work"},
			map[float64]uint64{0.6: 0, 0.7: 1e9, 0.99: 1e9, 1: 2e9}, 1e9*2/3 + 1e9},
		{"priority_level_request_utilization", map[string]string{"phase": "executing", "priority_level": "work"},
			map[float64]uint64{0.5: 0, 0.75: 2e9}, 2e9 * 2 / 3},
		{"priority_level_request_utilization", map[string]string{"phase": "waiting", "priority_level": "work"},
			map[float64]uint64{0: 1e9, 0.75: 1e9, 1: 2e9}, 1e9},
		// Server-wide, all requests are gets: executing 2 of 5 nominal seats
		// (work 3, catch-all 2, exempt 0), waiting 1 then 0 of 1 queue place.
		{"read_vs_write_current_requests", map[string]string{"phase": "executing", "request_kind": "readOnly"},
			map[float64]uint64{0.3: 0, 0.4: 2e9}, 2e9 * 0.4},
		{"read_vs_write_current_requests", map[string]string{"phase": "waiting", "request_kind": "readOnly"},
			map[float64]uint64{0: 1e9, 0.99: 1e9, 1: 2e9}, 1e9},
		{"read_vs_write_current_requests", map[string]string{"phase": "executing", "request_kind": "mutating"},
			map[float64]uint64{0: 2e9}, 0},
		{"demand_seats", map[string]string{"priority_level": "work"},
			map[float64]uint64{0.8: 0, 1: 1e9, 1.2: 1e9, 1.4: 2e9}, 1e9*4/3 + 1e9},
	} {
		h := findHistogram(t, reg, "apiserver_flowcontrol_"+tc.name, tc.labels)
		if h == nil {
			continue
		}
		if h.GetSampleCount() != 2e9 {
			t.Errorf("%s%v count = %d, want 2e9 (ns)", tc.name, tc.labels, h.GetSampleCount())
		}
		if d := h.GetSampleSum() - tc.sum; d > 1 || d < -1 {
			t.Errorf("%s%v sum = %v, want %v", tc.name, tc.labels, h.GetSampleSum(), tc.sum)
		}
		for _, b := range h.GetBucket() {
			if want, ok := tc.buckets[b.GetUpperBound()]; ok && b.GetCumulativeCount() != want {
				t.Errorf("%s%v bucket le=%v = %d, want %d", tc.name, tc.labels, b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		}
	}
	m.Attach(nil)
	if n := testutil.CollectAndCount(m.scraped); n != 0 {
		t.Errorf("after Attach(nil): %d scraped series, want 0", n)
	}
	a2.Finish()
	w.Finish()
}

// findHistogram returns the histogram of the series of name with exactly
// labels, failing the test if there is none.
func findHistogram(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue series
				}
			}
			return m.GetHistogram()
		}
	}
	t.Errorf("no series %s%v", name, labels)
	return nil
}
