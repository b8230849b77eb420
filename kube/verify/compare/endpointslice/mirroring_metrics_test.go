//lint:file-ignore SA1019 the mirroring controller exists to read the deprecated core/v1 Endpoints API

package endpointslicecompare

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/legacyregistry"
	upstreammirror "k8s.io/kubernetes/pkg/controller/endpointslicemirroring"
	upstreammetrics "k8s.io/kubernetes/pkg/controller/endpointslicemirroring/metrics"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
	"github.com/fairslice/fairslice/kube/internal/slicescenario"
)

// mirrorSide is a mirroring controller (upstream's or fairslice's)
// running on its own fake clientset with started informers.
type mirrorSide struct {
	client *fake.Clientset
	g      prometheus.Gatherer
}

func startMirrorSide(t *testing.T, upstream bool) *mirrorSide {
	t.Helper()
	client, factory := newSideClient()
	ctx, cancel := context.WithCancel(context.Background())
	eps, slices, svcs := factory.Core().V1().Endpoints(), factory.Discovery().V1().EndpointSlices(), factory.Core().V1().Services()
	side := &mirrorSide{client: client}
	var run func(context.Context, int)
	if upstream {
		run = upstreammirror.NewController(ctx, eps, slices, svcs, 3, client, 0).Run
		side.g = legacyregistry.DefaultGatherer
	} else {
		reg := prometheus.NewRegistry()
		c, err := endpointslice.NewMirroringControllerWithOptions(ctx, eps, slices, svcs, client, endpointslice.MirroringOptions{MaxEndpointsPerSubset: 3, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		run, side.g = c.Run, reg
	}
	runSide(t, ctx, cancel, factory, run)
	return side
}

// newSideClient returns the fake API server of one side of a
// side-by-side test (see actAsAPIServer and lagSliceWatch) and an informer
// factory on it.
func newSideClient() (*fake.Clientset, informers.SharedInformerFactory) {
	client := fake.NewClientset()
	endpointslicetest.ActAsAPIServer(client)
	lagSliceWatch(client, 50*time.Millisecond)
	return client, informers.NewSharedInformerFactory(client, 0)
}

// runSide starts factory's informers and run with one worker, until the
// test ends: then it cancels ctx and waits for both to stop.
func runSide(t *testing.T, ctx context.Context, cancel context.CancelFunc, factory informers.SharedInformerFactory, run func(context.Context, int)) {
	t.Helper()
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { run(ctx, 1) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
	})
}

// lagSliceWatch delays the EndpointSlice watch events of the fake
// clientset by lag, as an API server's watch lags behind its writes: the
// fake delivers an event before the write returns, so a controller would
// sometimes see its own write before recording it, and sync again. The
// objects delivered have no apiVersion and kind, as a typed client's
// decoder leaves them (the fake's tracker fills them in on create, and
// upstream's reconciler, which compares an existing placeholder slice
// with a new one field by field, would otherwise rewrite a placeholder
// on every sync).
func lagSliceWatch(client *fake.Clientset, lag time.Duration) {
	client.PrependWatchReactor("endpointslices", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		ch := make(chan watch.Event)
		pw := watch.NewProxyWatcher(ch)
		go func() {
			defer w.Stop()
			for {
				select {
				case <-pw.StopChan():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					time.Sleep(lag)
					if ev.Object != nil {
						ev.Object = ev.Object.DeepCopyObject()
						ev.Object.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
					}
					select {
					case ch <- ev:
					case <-pw.StopChan():
						return
					}
				}
			}
		}()
		return true, pw, nil
	})
}

// familiesOf returns the metric families of one subsystem: those named
// subsystem_*.
func familiesOf(t *testing.T, g prometheus.Gatherer, subsystem string) []*dto.MetricFamily {
	t.Helper()
	all, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []*dto.MetricFamily
	for _, f := range all {
		if strings.HasPrefix(f.GetName(), subsystem+"_") {
			out = append(out, f)
		}
	}
	return out
}

// metricShape is what a family promises: type, help, label names and
// histogram buckets.
type metricShape struct {
	Type    string
	Help    string
	Labels  []string
	Buckets []float64
}

func metricShapes(fams []*dto.MetricFamily) map[string]metricShape {
	out := map[string]metricShape{}
	for _, f := range fams {
		s := metricShape{Type: f.GetType().String(), Help: f.GetHelp()}
		if len(f.Metric) > 0 {
			m := f.Metric[0]
			for _, l := range m.Label {
				s.Labels = append(s.Labels, l.GetName())
			}
			if h := m.GetHistogram(); h != nil {
				for _, b := range h.Bucket {
					s.Buckets = append(s.Buckets, b.GetUpperBound())
				}
			}
		}
		out[f.GetName()] = s
	}
	return out
}

// metricValues flattens the families into series values: counters and
// gauges, and each histogram's count, sum and buckets, except the sync
// duration's (a time) whose count is the number of syncs.
func metricValues(fams []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			name := f.GetName() + "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.Counter != nil:
				out[name] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[name] = m.GetGauge().GetValue()
			case m.Histogram != nil && strings.HasSuffix(f.GetName(), "_sync_duration"):
			case m.Histogram != nil:
				out[name+"_count"] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"] = m.GetHistogram().GetSampleSum()
				for _, b := range m.GetHistogram().Bucket {
					out[fmt.Sprintf("%s_bucket{le=%g}", name, b.GetUpperBound())] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

// resetUpstreamMirroringMetrics empties upstream's mirroring metrics,
// which live in the process's legacy registry, so that a run (with
// -count above 1 too) starts from none, as fairslice's registry does.
func resetUpstreamMirroringMetrics() {
	for _, h := range []interface{ Reset() }{upstreammetrics.EndpointsAddedPerSync, upstreammetrics.EndpointsUpdatedPerSync,
		upstreammetrics.EndpointsRemovedPerSync, upstreammetrics.AddressesSkippedPerSync, upstreammetrics.EndpointsSyncDuration,
		upstreammetrics.EndpointsDesired, upstreammetrics.NumEndpointSlices, upstreammetrics.DesiredEndpointSlices,
		upstreammetrics.EndpointSliceChanges} {
		h.Reset()
	}
}

// TestMirroringMetricsMatchUpstream runs upstream's mirroring controller
// and fairslice's, each on its own fake clientset, through the same
// Endpoints changes, and after each requires the same metric families
// (names, help, types, label names, buckets) and the same values:
// endpoints added, updated and removed per sync, addresses skipped,
// slice changes by operation, and the efficiency gauges. Only the sync
// duration histogram's values are left out (a time). After each change
// the mirrored slices' content must be the same too
// (TestMirroredContentMatchesUpstream covers content more widely).
func TestMirroringMetricsMatchUpstream(t *testing.T) {
	up, ours := startMirrorSide(t, true), startMirrorSide(t, false)
	resetUpstreamMirroringMetrics()
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext", UID: "svc-uid"}}
	addr := func(ips ...string) []corev1.EndpointAddress {
		out := make([]corev1.EndpointAddress, len(ips))
		for i, ip := range ips {
			out[i] = corev1.EndpointAddress{IP: ip}
		}
		return out
	}
	ports := []corev1.EndpointPort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP}}
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext", UID: "ep-uid"},
		Subsets: []corev1.EndpointSubset{
			{Addresses: addr("10.0.0.1", "10.0.0.2", "bad"), NotReadyAddresses: addr("10.0.0.3"), Ports: ports},
			{Addresses: addr("fd00::1"), Ports: []corev1.EndpointPort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}},
		},
	}
	changed := ep.DeepCopy()
	changed.Subsets[0] = corev1.EndpointSubset{Addresses: addr("10.0.0.1", "10.0.0.3", "10.0.0.4"), Ports: ports}
	const (
		addedSum   = "endpoint_slice_mirroring_controller_endpoints_added_per_sync{}_sum"
		updatedSum = "endpoint_slice_mirroring_controller_endpoints_updated_per_sync{}_sum"
		removedSum = "endpoint_slice_mirroring_controller_endpoints_removed_per_sync{}_sum"
		reconciles = "endpoint_slice_mirroring_controller_addresses_skipped_per_sync{}_count"
		skipped    = "endpoint_slice_mirroring_controller_addresses_skipped_per_sync{}_sum"
		desired    = "endpoint_slice_mirroring_controller_endpoints_desired{}"
		numSlices  = "endpoint_slice_mirroring_controller_num_endpoint_slices{}"
		creates    = "endpoint_slice_mirroring_controller_changes{operation=create}"
		updates    = "endpoint_slice_mirroring_controller_changes{operation=update}"
	)
	steps := []struct {
		name string
		do   func(c *fake.Clientset) error
		want map[string]float64 // some of fairslice's values after the step, by hand
	}{
		// The Service alone: a sync that finds no Endpoints (no reconcile).
		{"service", func(c *fake.Clientset) error {
			_, err := c.CoreV1().Services("ns").Create(ctx, svc, metav1.CreateOptions{})
			return err
		}, map[string]float64{reconciles: 0}},
		{"created", func(c *fake.Clientset) error {
			_, err := c.CoreV1().Endpoints("ns").Create(ctx, ep, metav1.CreateOptions{})
			return err
		}, map[string]float64{reconciles: 1, addedSum: 4, skipped: 1, desired: 4, numSlices: 2, creates: 2}},
		// 10.0.0.2 removed, 10.0.0.3 turns ready, 10.0.0.4 added.
		{"changed", func(c *fake.Clientset) error {
			_, err := c.CoreV1().Endpoints("ns").Update(ctx, changed, metav1.UpdateOptions{})
			return err
		}, map[string]float64{reconciles: 2, addedSum: 5, updatedSum: 1, removedSum: 1, skipped: 1, desired: 4, numSlices: 2, creates: 2, updates: 1}},
		{"deleted", func(c *fake.Clientset) error {
			return c.CoreV1().Endpoints("ns").Delete(ctx, "ext", metav1.DeleteOptions{})
		}, map[string]float64{reconciles: 2, desired: 0, numSlices: 0, creates: 2, updates: 1}},
	}
	for _, step := range steps {
		before := []uint64{durationCount(t, up.g), durationCount(t, ours.g)}
		for _, s := range []*mirrorSide{up, ours} {
			if err := step.do(s.client); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
		}
		// Wait for fairslice's values to reach the step's, then for
		// upstream's to equal them: both controllers see the same sequence.
		waitForValues(t, step.name, mirroringSubsystem, ours.g, step.want, func() bool {
			return durationCount(t, ours.g) > before[1] && durationCount(t, up.g) > before[0]
		})
		requireSameMetrics(t, step.name, mirroringSubsystem, up.g, ours.g)
		requireSameMirroredContent(t, step.name, up, ours, [2]uint64{before[0], before[1]}, func(slicescenario.Content) bool { return true })
	}
	want := []string{
		"endpoint_slice_mirroring_controller_addresses_skipped_per_sync",
		"endpoint_slice_mirroring_controller_changes",
		"endpoint_slice_mirroring_controller_desired_endpoint_slices",
		"endpoint_slice_mirroring_controller_endpoints_added_per_sync",
		"endpoint_slice_mirroring_controller_endpoints_desired",
		"endpoint_slice_mirroring_controller_endpoints_removed_per_sync",
		"endpoint_slice_mirroring_controller_endpoints_sync_duration",
		"endpoint_slice_mirroring_controller_endpoints_updated_per_sync",
		"endpoint_slice_mirroring_controller_num_endpoint_slices",
	}
	for i, s := range []*mirrorSide{up, ours} {
		names := slices.Sorted(maps.Keys(metricShapes(familiesOf(t, s.g, mirroringSubsystem))))
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("side %d's mirroring metrics (-want +got):\n%s", i, diff)
		}
	}
}

// waitForValues waits up to 10 s for synced to report true and for the
// values of the subsystem's families on g to include want, failing the
// test if they do not.
func waitForValues(t *testing.T, step, subsystem string, g prometheus.Gatherer, want map[string]float64, synced func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := metricValues(familiesOf(t, g, subsystem))
		if synced() && hasValues(got, want) {
			return
		}
		if time.Now().After(deadline) {
			shown := map[string]float64{}
			for k := range want {
				shown[k] = got[k]
			}
			t.Fatalf("%s: fairslice's values (-want +got) within 10 s:\n%s", step, cmp.Diff(want, shown))
		}
	}
}

// requireSameMetrics waits up to 10 s for the values of the subsystem's
// families to be the same on both sides (each side's controller may
// still be syncing), failing the test if they are not, and then requires
// the same shapes of the families both sides have (a family one side has
// not yet created is checked by the caller's list of names).
func requireSameMetrics(t *testing.T, step, subsystem string, up, ours prometheus.Gatherer) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		upFams, ourFams := familiesOf(t, up, subsystem), familiesOf(t, ours, subsystem)
		diff := cmp.Diff(metricValues(upFams), metricValues(ourFams))
		if diff == "" {
			upShapes, ourShapes := metricShapes(upFams), metricShapes(ourFams)
			for n := range upShapes {
				if _, ok := ourShapes[n]; !ok {
					delete(upShapes, n)
				}
			}
			if d := cmp.Diff(upShapes, ourShapes); d != "" {
				t.Errorf("%s: metric families differ (-upstream +fairslice):\n%s", step, d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: metric values still differ after 10 s (-upstream +fairslice):\n%s", step, diff)
		}
	}
}

func hasValues(got, want map[string]float64) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func durationCount(t *testing.T, g prometheus.Gatherer) uint64 {
	t.Helper()
	for _, f := range familiesOf(t, g, mirroringSubsystem) {
		if f.GetName() == mirroringSubsystem+"_endpoints_sync_duration" {
			return f.Metric[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}
