package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
	"github.com/fairslice/fairslice/kube/internal/fixture"
	"github.com/fairslice/fairslice/topology"
)

// ctlFixture is a controller on a fake clientset whose informers are
// never started: tests put objects into the informers' stores
// themselves, so that they decide what the controller's cache shows.
type ctlFixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	c        *Controller
	recorder *record.FakeRecorder
	reg      *prometheus.Registry
}

func newCtlFixture(t *testing.T, opts ControllerOptions, objs ...runtime.Object) *ctlFixture {
	t.Helper()
	f := &ctlFixture{t: t, client: fake.NewClientset(objs...), recorder: record.NewFakeRecorder(100), reg: prometheus.NewRegistry()}
	endpointslicetest.ActAsAPIServer(f.client)
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	opts.EventRecorder = f.recorder
	opts.Registerer = f.reg
	c, err := NewControllerWithOptions(context.Background(), f.factory.Core().V1().Pods(), f.factory.Core().V1().Services(),
		f.factory.Core().V1().Nodes(), f.factory.Discovery().V1().EndpointSlices(), f.client, opts)
	if err != nil {
		t.Fatalf("NewControllerWithOptions: %v", err)
	}
	f.c = c
	t.Cleanup(func() { c.queue.ShutDown(); c.topoQueue.ShutDown() })
	for _, o := range objs {
		f.store(o)
	}
	return f
}

// store puts obj into its informer's store, as a watch event would.
func (f *ctlFixture) store(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.Pod:
		err = f.factory.Core().V1().Pods().Informer().GetStore().Add(o)
	case *corev1.Service:
		err = f.factory.Core().V1().Services().Informer().GetStore().Add(o)
	case *corev1.Node:
		err = f.factory.Core().V1().Nodes().Informer().GetStore().Add(o)
	case *discovery.EndpointSlice:
		err = f.factory.Discovery().V1().EndpointSlices().Informer().GetStore().Add(o)
	default:
		f.t.Fatalf("store: unexpected %T", obj)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// syncSlicesToStore makes the slice informer show exactly the slices in
// the fake API server.
func (f *ctlFixture) syncSlicesToStore() { replaceSlices(f.t, f.client, f.factory) }

// replaceSlices makes the factory's slice informer show exactly the
// slices in the fake API server.
func replaceSlices(t *testing.T, client *fake.Clientset, factory informers.SharedInformerFactory) {
	t.Helper()
	list := listSlices(t, client)
	objs := make([]any, len(list))
	for i := range list {
		objs[i] = &list[i]
	}
	if err := factory.Discovery().V1().EndpointSlices().Informer().GetStore().Replace(objs, ""); err != nil {
		t.Fatal(err)
	}
}

// listSlices returns the slices in the fake API server.
func listSlices(t *testing.T, client *fake.Clientset) []discovery.EndpointSlice {
	t.Helper()
	list, err := client.DiscoveryV1().EndpointSlices("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// writes counts the create, update and delete calls on EndpointSlices.
func (f *ctlFixture) writes() map[string]int {
	out := map[string]int{}
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource == "endpointslices" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out[a.GetVerb()]++
		}
	}
	return out
}

// total is the number of writes in a writes() count.
func total(m map[string]int) int { return m["create"] + m["update"] + m["delete"] }

func (f *ctlFixture) slices() []discovery.EndpointSlice { return listSlices(f.t, f.client) }

// endpointSet is the Service's endpoints by address, with readiness.
func endpointSet(slices []discovery.EndpointSlice) map[string]bool {
	out := map[string]bool{}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				out[a] = e.Conditions.Ready != nil && *e.Conditions.Ready
			}
		}
	}
	return out
}

func TestNewControllerWithOptionsRefusesBadOptions(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	for _, tc := range []struct {
		opts ControllerOptions
		want string
	}{
		{ControllerOptions{MaxEndpointsPerSlice: 1001}, "MaxEndpointsPerSlice 1001"},
		{ControllerOptions{MaxEndpointsPerSlice: -1}, "MaxEndpointsPerSlice -1"},
		{ControllerOptions{ControllerName: "not a label value!"}, `ControllerName "not a label value!"`},
		{ControllerOptions{EndpointUpdatesBatchPeriod: -time.Second}, "EndpointUpdatesBatchPeriod -1s"},
		{ControllerOptions{CoalesceWrites: -time.Millisecond}, "CoalesceWrites -1ms"},
		{ControllerOptions{Allocator: topology.AllocatorMinCrossZone + 1}, "Allocator 2"},
		{ControllerOptions{Hysteresis: -0.1}, "Hysteresis -0.1: must be 0..10"},
		{ControllerOptions{Hysteresis: math.NaN()}, "Hysteresis NaN: must be 0..10"},
		{ControllerOptions{Hysteresis: math.Inf(1)}, "Hysteresis +Inf: must be 0..10"},
		{ControllerOptions{Hysteresis: math.Inf(-1)}, "Hysteresis -Inf: must be 0..10"},
		{ControllerOptions{Hysteresis: 10.5}, "Hysteresis 10.5: must be 0..10"},
		// All problems at once.
		{ControllerOptions{MaxEndpointsPerSlice: -1, CoalesceWrites: -time.Second}, "must be 1..1000\nendpointslice: CoalesceWrites -1s"},
		{ControllerOptions{ControllerName: "a b", Hysteresis: math.NaN()}, `ControllerName "a b"`},
		{ControllerOptions{ControllerName: "a b", Hysteresis: math.NaN()}, "\nendpointslice: Hysteresis NaN"},
	} {
		_, err := NewControllerWithOptions(context.Background(), f.Core().V1().Pods(), f.Core().V1().Services(), f.Core().V1().Nodes(),
			f.Discovery().V1().EndpointSlices(), fake.NewClientset(), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewControllerWithOptions(%+v) = %v, want an error containing %q", tc.opts, err, tc.want)
		}
	}
}

// The options whose zero values are defaults are accepted as zero.
func TestNewControllerWithOptionsZeroValues(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	c, err := NewControllerWithOptions(context.Background(), f.Core().V1().Pods(), f.Core().V1().Services(), f.Core().V1().Nodes(),
		f.Discovery().V1().EndpointSlices(), fake.NewClientset(), ControllerOptions{EventRecorder: record.NewFakeRecorder(1)})
	if err != nil {
		t.Fatalf("NewControllerWithOptions(zero options) = %v, want nil", err)
	}
	type got struct {
		Max        int
		Name       string
		Hysteresis float64
	}
	want := got{Max: 100, Name: ControllerName}
	if diff := cmp.Diff(want, got{c.coreOpts.MaxEndpointsPerSlice, c.name, c.topoOpts.Hysteresis}); diff != "" {
		t.Errorf("zero options (-want +got):\n%s", diff)
	}
}

// NewController panics for a maxEndpointsPerSlice outside 1..1000, 0
// included (only the options take 0 as the default), naming the value.
func TestNewControllerPanicsOnBadMax(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	for _, tc := range []struct {
		max  int32
		want string
	}{
		{0, "maxEndpointsPerSlice 0: must be 1..1000"},
		{-5, "MaxEndpointsPerSlice -5: must be 1..1000"},
		{1001, "MaxEndpointsPerSlice 1001: must be 1..1000"},
	} {
		got := func() (msg string) {
			defer func() {
				if r := recover(); r != nil {
					msg = fmt.Sprint(r)
				}
			}()
			NewController(context.Background(), f.Core().V1().Pods(), f.Core().V1().Services(), f.Core().V1().Nodes(),
				f.Discovery().V1().EndpointSlices(), tc.max, fake.NewClientset(), 0)
			return ""
		}()
		if !strings.Contains(got, tc.want) {
			t.Errorf("NewController(max %d) panicked with %q, want a panic containing %q", tc.max, got, tc.want)
		}
	}
	// In range, it does not panic.
	NewController(context.Background(), f.Core().V1().Pods(), f.Core().V1().Services(), f.Core().V1().Nodes(),
		f.Discovery().V1().EndpointSlices(), 1000, fake.NewClientset(), 0)
}

// A first sync writes the slices as upstream would: labels, owner
// reference, trigger time (the Service's creation on the first sync),
// endpoints with conditions and zones.
func TestSyncServiceCreatesSlices(t *testing.T) {
	objs := []runtime.Object{fixture.Service("web"), fixture.Node("n1", "zone-a", "4")}
	for i := range 150 {
		objs = append(objs, fixture.Pod("web", i, i%3 != 0, "n1"))
	}
	f := newCtlFixture(t, ControllerOptions{}, objs...)
	if err := f.c.SyncService(context.Background(), "ns/web"); err != nil {
		t.Fatalf("SyncService = %v, want nil", err)
	}
	if got, want := f.writes(), map[string]int{"create": 2}; !cmp.Equal(got, want) {
		t.Errorf("writes = %v, want %v", got, want)
	}
	got := f.slices()
	eps := endpointSet(got)
	if len(eps) != 150 {
		t.Fatalf("endpoints = %d, want 150", len(eps))
	}
	for i := range 150 {
		p := fixture.Pod("web", i, i%3 != 0, "n1")
		if ready, ok := eps[p.Status.PodIP]; !ok || ready != (i%3 != 0) {
			t.Errorf("endpoint %s: present %v ready %v, want present, ready %v", p.Status.PodIP, ok, ready, i%3 != 0)
		}
	}
	for _, s := range got {
		wantLabels := map[string]string{discovery.LabelServiceName: "web", discovery.LabelManagedBy: ControllerName}
		if diff := cmp.Diff(wantLabels, s.Labels); diff != "" {
			t.Errorf("slice %s labels (-want +got):\n%s", s.Name, diff)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "web-uid" || s.OwnerReferences[0].Kind != "Service" {
			t.Errorf("slice %s owner references = %+v, want the Service", s.Name, s.OwnerReferences)
		}
		if got, want := s.Annotations[corev1.EndpointsLastChangeTriggerTime], fixture.Created.UTC().Format(time.RFC3339Nano); got != want {
			t.Errorf("slice %s trigger time = %q, want %q", s.Name, got, want)
		}
		if s.Endpoints[0].Zone == nil || *s.Endpoints[0].Zone != "zone-a" {
			t.Errorf("slice %s zone = %v, want zone-a", s.Name, s.Endpoints[0].Zone)
		}
	}
	if got := testutil.ToFloat64(f.c.metrics.changes.WithLabelValues("create")); got != 2 {
		t.Errorf("endpoint_slice_controller_changes{operation=create} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(f.c.metrics.endpointsDesired.WithLabelValues()); got != 150 {
		t.Errorf("endpoint_slice_controller_endpoints_desired = %v, want 150", got)
	}
}

// The stale-informer guard: a sync that runs before the informer shows
// the controller's own writes fails with ErrStaleInformer and writes
// nothing (upstream would otherwise create duplicates); once the informer
// catches up, the sync is a no-op.
func TestSyncServiceStaleInformer(t *testing.T) {
	objs := []runtime.Object{fixture.Service("web"), fixture.Node("n1", "zone-a", "4")}
	for i := range 3 {
		objs = append(objs, fixture.Pod("web", i, true, "n1"))
	}
	f := newCtlFixture(t, ControllerOptions{}, objs...)
	ctx := context.Background()
	if err := f.c.SyncService(ctx, "ns/web"); err != nil {
		t.Fatalf("first SyncService = %v, want nil", err)
	}
	err := f.c.SyncService(ctx, "ns/web")
	if !errors.Is(err, ErrStaleInformer) {
		t.Fatalf("SyncService before the informer saw the create = %v, want ErrStaleInformer", err)
	}
	f.c.handleErr(ctx, "ns/web", err)
	if got := f.c.queue.NumRequeues("ns/web"); got != 1 {
		t.Errorf("NumRequeues after a stale sync = %d, want 1", got)
	}
	if got := testutil.ToFloat64(f.c.metrics.syncs.WithLabelValues("stale")); got != 1 {
		t.Errorf("endpoint_slice_controller_syncs{result=stale} = %v, want 1", got)
	}
	f.syncSlicesToStore()
	if err := f.c.SyncService(ctx, "ns/web"); err != nil {
		t.Fatalf("SyncService after the informer caught up = %v, want nil", err)
	}
	if got, want := f.writes(), map[string]int{"create": 1}; !cmp.Equal(got, want) {
		t.Errorf("writes = %v, want %v (no duplicate)", got, want)
	}
	if n := len(f.slices()); n != 1 {
		t.Errorf("slices = %d, want 1", n)
	}

	// An update the informer has not seen yet: the stored slice has an
	// older generation than the controller wrote.
	p := fixture.Pod("web", 0, false, "n1")
	p.ResourceVersion = "2"
	f.store(p)
	if err := f.c.SyncService(ctx, "ns/web"); err != nil {
		t.Fatalf("SyncService after a readiness flip = %v, want nil", err)
	}
	if err := f.c.SyncService(ctx, "ns/web"); !errors.Is(err, ErrStaleInformer) {
		t.Errorf("SyncService before the informer saw the update = %v, want ErrStaleInformer", err)
	}
	if got, want := f.writes(), map[string]int{"create": 1, "update": 1}; !cmp.Equal(got, want) {
		t.Errorf("writes = %v, want %v", got, want)
	}
}

// Services without a selector, and ExternalName Services, get nothing
// from this controller; a deleted Service is forgotten.
func TestSyncServiceSkips(t *testing.T) {
	noSel := fixture.Service("nosel", func(s *corev1.Service) { s.Spec.Selector = nil })
	ext := fixture.Service("ext", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName })
	f := newCtlFixture(t, ControllerOptions{}, noSel, ext, fixture.Pod("nosel", 0, true, ""), fixture.Pod("ext", 1, true, ""))
	for _, key := range []string{"ns/nosel", "ns/ext", "ns/gone"} {
		if err := f.c.SyncService(context.Background(), key); err != nil {
			t.Errorf("SyncService(%q) = %v, want nil", key, err)
		}
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("writes = %v, want none", got)
	}
}

// A failed write is reported with upstream's event and retried.
func TestSyncServiceWriteFailure(t *testing.T) {
	f := newCtlFixture(t, ControllerOptions{}, fixture.Service("web"), fixture.Node("n1", "zone-a", "4"), fixture.Pod("web", 0, true, "n1"))
	f.client.PrependReactor("create", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	err := f.c.SyncService(context.Background(), "ns/web")
	if err == nil || !strings.Contains(err.Error(), "etcd is down") {
		t.Fatalf("SyncService = %v, want the create error", err)
	}
	select {
	case ev := <-f.recorder.Events:
		if !strings.HasPrefix(ev, "Warning FailedToUpdateEndpointSlices Error updating Endpoint Slices for Service ns/web:") {
			t.Errorf("event = %q, want a FailedToUpdateEndpointSlices warning", ev)
		}
	default:
		t.Errorf("no event recorded")
	}
	f.c.handleErr(context.Background(), "ns/web", err)
	if got := testutil.ToFloat64(f.c.metrics.syncs.WithLabelValues("error")); got != 1 {
		t.Errorf("endpoint_slice_controller_syncs{result=error} = %v, want 1", got)
	}
}

// A pod on a node the informer does not know is left out, the rest is
// written, and the sync fails so that it is retried, as upstream.
func TestSyncServiceMissingNode(t *testing.T) {
	f := newCtlFixture(t, ControllerOptions{}, fixture.Service("web"), fixture.Node("n1", "zone-a", "4"),
		fixture.Pod("web", 0, true, "n1"), fixture.Pod("web", 1, true, "n2"))
	err := f.c.SyncService(context.Background(), "ns/web")
	if err == nil || !strings.Contains(err.Error(), "n2") {
		t.Errorf("SyncService = %v, want an error naming node n2", err)
	}
	if got, want := endpointSet(f.slices()), map[string]bool{"10.0.0.1": true}; !cmp.Equal(got, want) {
		t.Errorf("endpoints = %v, want %v", got, want)
	}
}

// Auto hints go through package topology, with upstream's events.
func TestSyncServiceTopologyHints(t *testing.T) {
	svc := fixture.Service("web", func(s *corev1.Service) {
		s.Annotations = map[string]string{topology.AnnotationTopologyMode: "Auto"}
	})
	objs := []runtime.Object{svc, fixture.Node("a", "zone-a", "4"), fixture.Node("b", "zone-b", "4"), fixture.Node("c", "zone-c", "4")}
	for i := range 30 {
		objs = append(objs, fixture.Pod("web", i, true, string(rune('a'+i%3))))
	}
	f := newCtlFixture(t, ControllerOptions{}, objs...)
	f.c.updateCapacity(context.Background())
	if err := f.c.SyncService(context.Background(), "ns/web"); err != nil {
		t.Fatalf("SyncService = %v, want nil", err)
	}
	hinted := 0
	for _, s := range f.slices() {
		for _, e := range s.Endpoints {
			if e.Hints != nil && len(e.Hints.ForZones) == 1 && e.Zone != nil && e.Hints.ForZones[0].Name == *e.Zone {
				hinted++
			}
		}
	}
	if hinted != 30 {
		t.Errorf("endpoints hinted for their own zone = %d, want 30", hinted)
	}
	select {
	case ev := <-f.recorder.Events:
		if !strings.HasPrefix(ev, "Normal TopologyAwareHintsEnabled") {
			t.Errorf("event = %q, want TopologyAwareHintsEnabled", ev)
		}
	default:
		t.Errorf("no event recorded")
	}
	if n, err := testutil.GatherAndCount(f.reg, "endpoint_slice_controller_endpointslices_changed_per_sync"); err != nil || n != 1 {
		t.Errorf("endpointslices_changed_per_sync series = %d, %v, want 1, nil", n, err)
	}
	// Losing a zone's nodes overloads the hints: the Service is queued.
	if err := f.factory.Core().V1().Nodes().Informer().GetStore().Delete(fixture.Node("c", "zone-c", "4")); err != nil {
		t.Fatal(err)
	}
	f.c.updateCapacity(context.Background())
	if got := f.c.queue.Len(); got != 1 {
		t.Errorf("queue length after a zone lost its nodes = %d, want 1 (the Service)", got)
	}
}

// Pod events queue the Services they concern, with upstream's rules.
func TestOnPodQueuesServices(t *testing.T) {
	web, api := fixture.Service("web"), fixture.Service("api")
	f := newCtlFixture(t, ControllerOptions{}, web, api, fixture.Service("nosel", func(s *corev1.Service) { s.Spec.Selector = nil }))
	p := fixture.Pod("web", 0, true, "n1")
	heartbeat := p.DeepCopy()
	heartbeat.ResourceVersion = "2"
	heartbeat.Status.Conditions[0].LastProbeTime = metav1.Now()
	flip := p.DeepCopy()
	flip.ResourceVersion = "3"
	flip.Status.Conditions[0].Status = corev1.ConditionFalse
	relabel := p.DeepCopy()
	relabel.ResourceVersion = "4"
	relabel.Labels = map[string]string{"app": "api"}
	for _, tc := range []struct {
		name     string
		old, new any
		want     []string
	}{
		{"add", nil, p, []string{"ns/web"}},
		{"delete", p, nil, []string{"ns/web"}},
		{"tombstone", cacheTombstone(p), nil, []string{"ns/web"}},
		{"resync", p, p, nil},
		{"unrelated change", p, heartbeat, nil},
		{"readiness flip", p, flip, []string{"ns/web"}},
		{"relabel", p, relabel, []string{"ns/api", "ns/web"}},
	} {
		f.c.onPod(tc.old, tc.new)
		var got []string
		for f.c.queue.Len() > 0 {
			k, _ := f.c.queue.Get()
			got = append(got, k)
			f.c.queue.Done(k)
			f.c.queue.Forget(k)
		}
		if diff := cmp.Diff(tc.want, got, sortStrings); diff != "" {
			t.Errorf("onPod(%s) queued (-want +got):\n%s", tc.name, diff)
		}
	}
}

// The controller on running informers: pods come and go, become ready
// and not, and the slices follow; Run stops cleanly.
func TestControllerRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client := fake.NewClientset(fixture.Service("web"), fixture.Node("n1", "zone-a", "4"))
	endpointslicetest.ActAsAPIServer(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := NewControllerWithOptions(ctx, factory.Core().V1().Pods(), factory.Core().V1().Services(), factory.Core().V1().Nodes(),
		factory.Discovery().V1().EndpointSlices(), client, ControllerOptions{EventRecorder: record.NewFakeRecorder(100), MaxEndpointsPerSlice: 10})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx, 2) })
	defer func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
	}()

	waitFor := func(what string, want map[string]bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			list, err := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
			if err == nil && cmp.Equal(endpointSet(list.Items), want) {
				for _, s := range list.Items {
					if len(s.Endpoints) > 10 {
						t.Fatalf("%s: slice %s holds %d endpoints, max 10", what, s.Name, len(s.Endpoints))
					}
				}
				return
			}
			if time.Now().After(deadline) {
				var got map[string]bool
				if err == nil {
					got = endpointSet(list.Items)
				}
				t.Fatalf("%s: endpoints did not converge (-want +got):\n%s", what, cmp.Diff(want, got))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("no pods", map[string]bool{})
	want := map[string]bool{}
	for i := range 25 {
		p := fixture.Pod("web", i, true, "n1")
		if _, err := client.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want[p.Status.PodIP] = true
	}
	waitFor("25 ready pods", want)
	for i := range 5 {
		p := fixture.Pod("web", i, false, "n1")
		p.ResourceVersion = "2"
		if _, err := client.CoreV1().Pods("ns").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		want[p.Status.PodIP] = false
	}
	waitFor("5 not ready", want)
	for i := 20; i < 25; i++ {
		p := fixture.Pod("web", i, true, "n1")
		if err := client.CoreV1().Pods("ns").Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		delete(want, p.Status.PodIP)
	}
	waitFor("5 deleted", want)
}

func cacheTombstone(p *corev1.Pod) any {
	return cache.DeletedFinalStateUnknown{Key: p.Namespace + "/" + p.Name, Obj: p}
}

var sortStrings = cmpopts.SortSlices(func(a, b string) bool { return a < b })
