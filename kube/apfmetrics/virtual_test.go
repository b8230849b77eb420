package apfmetrics

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

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
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := flowschema.Decode([]byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	clk := &manualClock{now: time.Unix(1_800_000_000, 0)}
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
	m.Attach(nil)
	if n := testutil.CollectAndCount(m.scraped); n != 0 {
		t.Errorf("after Attach(nil): %d scraped series, want 0", n)
	}
	a2.Finish()
	w.Finish()
}
