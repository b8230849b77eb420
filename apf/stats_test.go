package apf

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/fairqueue"
)

// recordingObserver records the optional-extension events.
type recordingObserver struct {
	NopObserver
	limits   map[string]Limits
	stats    []fairqueue.DispatchStats
	noFit    int
	watchers []int
}

func (o *recordingObserver) LevelLimits(pl string, l Limits) { o.limits[pl] = l }
func (o *recordingObserver) DispatchStats(pl string, s fairqueue.DispatchStats) {
	if pl == "work" {
		o.stats = append(o.stats, s)
	}
}
func (o *recordingObserver) NoAccommodation(RequestEvent) { o.noFit++ }
func (o *recordingObserver) WatchCount(pl, fs string, n int) {
	if pl == "work" && fs == "tenants" {
		o.watchers = append(o.watchers, n)
	}
}

// TestObserverExtensions checks that a DispatchObserver and
// WatchCountObserver gets its extra events, the denominators in Limits,
// and Stats.
func TestObserverExtensions(t *testing.T) {
	obs := &recordingObserver{limits: map[string]Limits{}}
	clk := newFakeClock()
	c, err := New(mustDecode(t, testConfigYAML), Options{ServerConcurrencyLimit: 20, Clock: clk, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := obs.limits["work"]
	// 4 queues × queue length limit 2; Current seats as the denominator.
	if w.QueueCapacity != 8 || w.Queues != 4 || w.QueueLengthLimit != 2 || w.ConcurrencyDenominator != w.Current || w.Current == 0 {
		t.Errorf("work limits = %+v, want QueueCapacity 8, Queues 4, QueueLengthLimit 2, ConcurrencyDenominator = Current > 0", w)
	}
	// The catch-all level rejects (no queues): capacity 1, as upstream.
	if ca := obs.limits["catch-all"]; ca.QueueCapacity != 1 || ca.Queues != 0 {
		t.Errorf("catch-all limits = %+v, want QueueCapacity 1, Queues 0", ca)
	}
	ctx := context.Background()
	wide := func(*Classification, uint64) fairqueue.WorkEstimate {
		return fairqueue.WorkEstimate{InitialSeats: uint64(w.Current)}
	}
	a, err := c.Wait(ctx, tenant("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		tk, err := c.Wait(ctx, tenant("b"), wide) // does not fit beside a
		if err == nil {
			tk.Finish()
		}
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.levels["work"].mu.Lock()
		n := obs.noFit
		c.levels["work"].mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no NoAccommodation within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	a.Finish()
	if err := recv(t, done, "Wait"); err != nil {
		t.Fatal(err)
	}
	// a was dispatched at R = 0 from an idle queue set; b after a's finish.
	if len(obs.stats) != 2 || obs.stats[0] != (fairqueue.DispatchStats{}) {
		t.Errorf("DispatchStats = %+v, want 2, the first all zero", obs.stats)
	}
	c.ObserveWatchCount(&Classification{PriorityLevel: "work", FlowSchema: "tenants"}, 7)
	if diff := cmp.Diff([]int{7}, obs.watchers); diff != "" {
		t.Errorf("WatchCount (-want +got):\n%s", diff)
	}
	var names []string
	for _, s := range c.Stats() {
		names = append(names, s.Name)
		if s.Name == "work" && s.Counts.Dispatched != 2 {
			t.Errorf("Stats work dispatched = %d, want 2", s.Counts.Dispatched)
		}
	}
	if diff := cmp.Diff([]string{"catch-all", "exempt", "work"}, names); diff != "" {
		t.Errorf("Stats levels (-want +got):\n%s", diff)
	}
}

func TestEstimateWatchCount(t *testing.T) {
	e, err := NewWorkEstimator(WorkEstimatorConfig{}, nil, fixedWatches(25))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		verb, resource, sub string
		counted             bool
	}{
		{"create", "pods", "", true},
		{"delete", "pods", "", true},
		{"get", "pods", "", false},
		{"create", "serviceaccounts", "token", false},
	} {
		ri := RequestInfo{IsResourceRequest: true, Verb: tc.verb, Resource: tc.resource, Subresource: tc.sub}
		we, n, counted := e.EstimateWatchCount(&ri, nil, 10)
		if counted != tc.counted || (counted && n != 25) {
			t.Errorf("%s %s/%s: watches %d counted %v, want counted %v", tc.verb, tc.resource, tc.sub, n, counted, tc.counted)
		}
		if want := e.Estimate(&ri, nil, 10); we != want {
			t.Errorf("%s %s/%s: estimate %+v, Estimate gives %+v", tc.verb, tc.resource, tc.sub, we, want)
		}
	}
}
