package endpointslice

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/fairslice/fairslice/kube/internal/fixture"
)

// coalesceFixture is a synced Service of three ready pods on a
// controller with the given CoalesceWrites, whose clock (and its work
// queue's) the test steps.
type coalesceFixture struct {
	*ctlFixture
	clock   *clocktesting.FakeClock
	pods    map[int]*corev1.Pod
	version int
}

func newCoalesceFixture(t *testing.T, coalesce time.Duration) *coalesceFixture {
	objs := []runtime.Object{fixture.Service("web"), fixture.Node("n1", "zone-a", "4")}
	for i := range 3 {
		objs = append(objs, fixture.Pod("web", i, true, "n1"))
	}
	f := &coalesceFixture{ctlFixture: newCtlFixture(t, ControllerOptions{CoalesceWrites: coalesce}, objs...),
		clock: clocktesting.NewFakeClock(fixture.Created.Time), pods: map[int]*corev1.Pod{}, version: 1}
	f.c.queue.ShutDown()
	f.c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "coalesce_test", Clock: f.clock})
	f.c.now = f.clock.Now
	if n := f.sync(); n != 1 {
		t.Fatalf("first sync wrote %d times, want 1", n)
	}
	return f
}

// flip turns pod i's readiness around at the fixture's time, as the
// informer delivers it: into the store, then to the event handler (which
// queues the Service).
func (f *coalesceFixture) flip(i int) {
	f.version++
	old := f.pods[i]
	if old == nil {
		old = fixture.Pod("web", i, true, "n1")
	}
	cur := fixture.Pod("web", i, old.Status.Conditions[0].Status != corev1.ConditionTrue, "n1")
	cur.ResourceVersion = fmt.Sprint(f.version)
	cur.Status.Conditions[0].LastTransitionTime.Time = f.clock.Now()
	f.pods[i] = cur
	f.store(cur)
	f.c.onPod(old, cur)
}

// sync takes the Service's key from the queue if it is there, runs one
// sync, and returns the writes it made; the informer then shows them.
func (f *coalesceFixture) sync() int {
	f.t.Helper()
	if f.c.queue.Len() > 0 {
		key, _ := f.c.queue.Get()
		f.c.queue.Done(key)
	}
	f.client.ClearActions()
	err := f.c.SyncService(context.Background(), "ns/web")
	if err != nil {
		f.t.Fatalf("SyncService = %v", err)
	}
	f.c.handleErr(context.Background(), "ns/web", err) // as the worker does: the metrics
	n := total(f.writes())
	f.syncSlicesToStore()
	return n
}

// awaitQueued waits (with a deadline) for the Service's key to be ready
// in the queue, after a step of the fake clock.
func (f *coalesceFixture) awaitQueued() {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for f.c.queue.Len() == 0 {
		if time.Now().After(deadline) {
			f.t.Fatal("the Service was not requeued")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCoalesceWrites: three pod changes 100 ms apart, each synced at
// once. Upstream's controller (and CoalesceWrites 0) writes on each
// sync. With CoalesceWrites 1 s the first change is written at once, the
// next two are held back and written together when the second is up,
// with the earlier one's trigger time. The Service ends the same either
// way.
func TestCoalesceWrites(t *testing.T) {
	for _, tc := range []struct {
		name     string
		coalesce time.Duration
		writes   []int
		trigger  int    // the change whose time the slice carries at the end
		observed uint64 // syncs in the per-sync metrics, the fixture's first included
	}{
		{"off", 0, []int{1, 1, 1, 0}, 2, 5},
		{"on", time.Second, []int{1, 0, 0, 1}, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCoalesceFixture(t, tc.coalesce)
			f.clock.Step(10 * time.Second) // a quiet spell
			start := f.clock.Now()
			var got []int
			for i := range 3 {
				f.clock.SetTime(start.Add(time.Duration(i) * 100 * time.Millisecond))
				f.flip(i)
				got = append(got, f.sync())
			}
			f.clock.SetTime(start.Add(time.Second))
			if tc.coalesce > 0 {
				f.awaitQueued()
			}
			got = append(got, f.sync())
			if !cmp.Equal(got, tc.writes) {
				t.Errorf("writes per sync = %v, want %v", got, tc.writes)
			}
			slices := f.slices()
			want := map[string]bool{"10.0.0.1": false, "10.0.0.2": false, "10.0.0.3": false}
			if diff := cmp.Diff(want, endpointSet(slices)); diff != "" {
				t.Errorf("endpoints (-want +got):\n%s", diff)
			}
			// A held sync is a successful one, and not in the per-sync
			// metrics.
			if got := testutil.ToFloat64(f.c.metrics.syncs.WithLabelValues("success")); got != 5 {
				t.Errorf("endpoint_slice_controller_syncs{result=success} = %v, want 5", got)
			}
			if got := histogramCount(t, f.c.metrics.added); got != tc.observed {
				t.Errorf("endpoints_added_per_sync observations = %d, want %d (every sync but the held ones)", got, tc.observed)
			}
			wantTrigger := start.Add(time.Duration(tc.trigger) * 100 * time.Millisecond).UTC().Format(time.RFC3339Nano)
			if got := slices[0].Annotations[corev1.EndpointsLastChangeTriggerTime]; got != wantTrigger {
				t.Errorf("trigger time = %q, want %q", got, wantTrigger)
			}
		})
	}
}

// TestCoalesceWritesBound: under pod changes every 100 ms for 3 s, each
// synced at once, a Service is written at most once per CoalesceWrites,
// and it is written (never starved): at 0, 1, 2 and 3 s.
func TestCoalesceWritesBound(t *testing.T) {
	f := newCoalesceFixture(t, time.Second)
	f.clock.Step(10 * time.Second)
	start := f.clock.Now()
	var at []time.Duration
	for k := 0; k <= 30; k++ {
		f.clock.SetTime(start.Add(time.Duration(k) * 100 * time.Millisecond))
		f.flip(k % 3)
		if f.sync() > 0 {
			at = append(at, f.clock.Since(start))
		}
	}
	if want := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}; !cmp.Equal(at, want) {
		t.Errorf("written at %v, want %v", at, want)
	}
}

// histogramCount returns the number of observations of an unlabelled
// histogram.
func histogramCount(t *testing.T, h *prometheus.HistogramVec) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.WithLabelValues().(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestCoalesceWritesUndone: a held change that is undone before the
// Service is written leaves nothing behind; the next change is written
// with its own trigger time, not the undone one's.
func TestCoalesceWritesUndone(t *testing.T) {
	f := newCoalesceFixture(t, time.Second)
	f.clock.Step(10 * time.Second)
	start := f.clock.Now()
	var got []int
	for _, step := range []struct {
		at  time.Duration
		pod int
	}{
		{0, 0},                      // written at once
		{100 * time.Millisecond, 1}, // held
		{200 * time.Millisecond, 1}, // undone: nothing to write
		{2 * time.Second, 2},        // written at once, on its own
	} {
		f.clock.SetTime(start.Add(step.at))
		f.flip(step.pod)
		got = append(got, f.sync())
	}
	if want := []int{1, 0, 0, 1}; !cmp.Equal(got, want) {
		t.Errorf("writes per sync = %v, want %v", got, want)
	}
	want := start.Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	if got := f.slices()[0].Annotations[corev1.EndpointsLastChangeTriggerTime]; got != want {
		t.Errorf("trigger time = %q, want %q (the last change's, not the undone one's)", got, want)
	}
}
