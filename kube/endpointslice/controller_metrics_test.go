package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/legacyregistry"
	upstreammetrics "k8s.io/endpointslice/metrics"
	upstreamctl "k8s.io/kubernetes/pkg/controller/endpointslice"
)

// ctlSide is an EndpointSlice controller (upstream's or fairslice's)
// running on its own fake clientset with started informers.
type ctlSide struct {
	client *fake.Clientset
	g      prometheus.Gatherer
	slices discoverylisters.EndpointSliceLister
}

// waitForSlices waits up to 10 s for the side's EndpointSlice informer to
// hold every slice of its clientset at its generation, and no other.
func (s *ctlSide) waitForSlices(t *testing.T, step string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stored, err := s.client.Tracker().List(discovery.SchemeGroupVersion.WithResource("endpointslices"),
			discovery.SchemeGroupVersion.WithKind("EndpointSlice"), "ns")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{}
		for _, es := range stored.(*discovery.EndpointSliceList).Items {
			want[es.Name] = es.Generation
		}
		seen, err := s.slices.List(labels.Everything())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, es := range seen {
			got[es.Name] = es.Generation
		}
		diff := cmp.Diff(want, got)
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the informer's slices (-stored +informer) within 10 s:\n%s", step, diff)
		}
	}
}

func startCtlSide(t *testing.T, upstream bool) *ctlSide {
	t.Helper()
	client := fake.NewClientset()
	actAsAPIServer(client)
	lagSliceWatch(client, 50*time.Millisecond)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	pods, svcs, nodes, eps := factory.Core().V1().Pods(), factory.Core().V1().Services(), factory.Core().V1().Nodes(),
		factory.Discovery().V1().EndpointSlices()
	side := &ctlSide{client: client, slices: eps.Lister()}
	var run func(context.Context, int)
	if upstream {
		run = upstreamctl.NewController(ctx, pods, svcs, nodes, eps, 3, client, 0).Run
		side.g = legacyregistry.DefaultGatherer
	} else {
		reg := prometheus.NewRegistry()
		c, err := NewControllerWithOptions(ctx, pods, svcs, nodes, eps, client, ControllerOptions{MaxEndpointsPerSlice: 3, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		run, side.g = c.Run, reg
	}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { run(ctx, 1) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
	})
	return side
}

// syncCount is the number of syncs the controller has counted, whatever
// their result.
func syncCount(t *testing.T, g prometheus.Gatherer) float64 {
	t.Helper()
	var n float64
	for _, f := range familiesOf(t, g, metricsSubsystem) {
		if f.GetName() == metricsSubsystem+"_syncs" {
			for _, m := range f.Metric {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// resetUpstreamControllerMetrics empties upstream's EndpointSlice
// controller metrics, which live in the process's legacy registry, so
// that a run (with -count above 1 too) starts from none.
func resetUpstreamControllerMetrics() {
	for _, m := range []interface{ Reset() }{upstreammetrics.EndpointsAddedPerSync, upstreammetrics.EndpointsRemovedPerSync,
		upstreammetrics.EndpointsDesired, upstreammetrics.NumEndpointSlices, upstreammetrics.DesiredEndpointSlices,
		upstreammetrics.EndpointSliceChanges, upstreammetrics.EndpointSlicesChangedPerSync, upstreammetrics.EndpointSliceSyncs,
		upstreammetrics.ServicesCountByTrafficDistribution} {
		m.Reset()
	}
}

// metricsPod is a running pod on node n1 with the given label app and
// IPs, ready or not.
func metricsPod(name, app string, ready bool, ips ...string) *corev1.Pod {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIP:      ips[0],
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
		},
	}
	for _, ip := range ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	return p
}

// metricsService is a ClusterIP Service selecting pods labelled app with
// the given IP families.
func metricsService(name string, families ...corev1.IPFamily) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.ServiceSpec{
			Type:       corev1.ServiceTypeClusterIP,
			Selector:   map[string]string{"app": name},
			ClusterIP:  "10.96.0.10",
			IPFamilies: families,
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// createObject returns a step that creates a pod or a Service.
func createObject(obj any) func(c *fake.Clientset) error {
	return func(c *fake.Clientset) error {
		var err error
		switch o := obj.(type) {
		case *corev1.Pod:
			_, err = c.CoreV1().Pods("ns").Create(context.Background(), o, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = c.CoreV1().Services("ns").Create(context.Background(), o, metav1.CreateOptions{})
		default:
			err = fmt.Errorf("createObject: %T", obj)
		}
		return err
	}
}

// ctlMetricStep is one change made to both sides' clientsets, and some
// of fairslice's values after it, worked out by hand.
type ctlMetricStep struct {
	name string
	do   func(c *fake.Clientset) error
	want map[string]float64
}

// runCtlMetricSteps makes each step's change on both sides, waits until
// each side has synced since and fairslice's values include the step's
// (its syncs, retries included, are among them), and requires the same
// metrics on both sides.
func runCtlMetricSteps(t *testing.T, up, ours *ctlSide, steps []ctlMetricStep) {
	t.Helper()
	for _, step := range steps {
		before := []float64{syncCount(t, up.g), syncCount(t, ours.g)}
		for _, s := range []*ctlSide{up, ours} {
			if err := step.do(s.client); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
		}
		waitForValues(t, step.name, metricsSubsystem, ours.g, step.want, func() bool {
			return syncCount(t, up.g) > before[0] && syncCount(t, ours.g) > before[1]
		})
		requireSameMetrics(t, step.name, metricsSubsystem, up.g, ours.g)
		// The next step starts once each side's informer holds the slices
		// written, so that neither side's next sync finds its informer
		// stale (a retry a second later, and a sync counted "stale").
		for _, s := range []*ctlSide{up, ours} {
			s.waitForSlices(t, step.name)
		}
	}
}

// TestControllerMetricsMatchUpstream runs upstream's EndpointSlice
// controller and fairslice's, each on its own fake clientset, through the
// same changes to a single-stack and a dual-stack Service and their pods,
// one change a step so that each controller syncs once per step, and
// after each step requires the same endpoint_slice_controller_* families
// (names, help, types, label names, buckets) and the same values of every
// series: endpoints added and removed per sync and slices changed per
// sync (upstream observes each once per address type reconciled), slice
// changes by operation, syncs by result, and the efficiency gauges (which
// upstream keeps per Service for the last address type reconciled). None
// of the controller's metrics depends on timing (it has no duration
// histogram), so every value is compared.
//
// Upstream reconciles the address types of a dual-stack Service in a
// random order, so every pod of the dual-stack Service has an address of
// each family: both address types then have the same figures, and the
// gauges do not depend on which was last.
func TestControllerMetricsMatchUpstream(t *testing.T) {
	up, ours := startCtlSide(t, true), startCtlSide(t, false)
	resetUpstreamControllerMetrics()
	ctx := context.Background()
	const (
		addedCount   = "endpoint_slice_controller_endpoints_added_per_sync{}_count"
		addedSum     = "endpoint_slice_controller_endpoints_added_per_sync{}_sum"
		removedSum   = "endpoint_slice_controller_endpoints_removed_per_sync{}_sum"
		changedCount = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=}_count"
		changedSum   = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=}_sum"
		creates      = "endpoint_slice_controller_changes{operation=create}"
		updates      = "endpoint_slice_controller_changes{operation=update}"
		desired      = "endpoint_slice_controller_endpoints_desired{}"
		numSlices    = "endpoint_slice_controller_num_endpoint_slices{}"
		wantSlices   = "endpoint_slice_controller_desired_endpoint_slices{}"
		successes    = "endpoint_slice_controller_syncs{result=success}"
	)
	create := createObject
	version := 0
	updatePod := func(p *corev1.Pod) func(c *fake.Clientset) error {
		// A new resource version, as the API server gives (the fake does
		// not): a handler ignores an update without one.
		version++
		p.ResourceVersion = fmt.Sprint(version)
		return func(c *fake.Clientset) error {
			_, err := c.CoreV1().Pods("ns").Update(ctx, p, metav1.UpdateOptions{})
			return err
		}
	}
	deleting := metricsService("two", corev1.IPv4Protocol, corev1.IPv6Protocol)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1e9, 0)}
	deleting.Finalizers = []string{"example.com/hold"}
	steps := []ctlMetricStep{
		// No pods yet: a placeholder slice, counted as one slice.
		{"single-stack", create(metricsService("one", corev1.IPv4Protocol)), map[string]float64{
			successes: 1, addedCount: 1, addedSum: 0, changedCount: 1, changedSum: 1, creates: 1,
			desired: 0, numSlices: 1, wantSlices: 1}},
		// The placeholder is reused.
		{"single-stack pod", create(metricsPod("one-a", "one", true, "10.0.1.1")), map[string]float64{
			successes: 2, addedCount: 2, addedSum: 1, changedSum: 2, creates: 1, updates: 1, desired: 1, numSlices: 1}},
		{"single-stack second pod", create(metricsPod("one-b", "one", true, "10.0.1.2")), map[string]float64{
			successes: 3, addedCount: 3, addedSum: 2, changedSum: 3, updates: 2, desired: 2, numSlices: 1, wantSlices: 1}},
		// From here, observed once per address type, and the gauges count
		// one address type of the dual-stack Service.
		{"dual-stack", create(metricsService("two", corev1.IPv4Protocol, corev1.IPv6Protocol)), map[string]float64{
			successes: 4, addedCount: 5, addedSum: 2, changedCount: 5, changedSum: 5, creates: 3,
			desired: 2, numSlices: 2, wantSlices: 2}},
		{"dual-stack pod", create(metricsPod("two-a", "two", true, "10.0.2.1", "fd00::2:1")), map[string]float64{
			successes: 5, addedCount: 7, addedSum: 4, changedSum: 7, updates: 4, desired: 3, numSlices: 2}},
		{"dual-stack second pod", create(metricsPod("two-b", "two", true, "10.0.2.2", "fd00::2:2")), map[string]float64{
			successes: 6, addedCount: 9, addedSum: 6, changedSum: 9, updates: 6, desired: 4, numSlices: 2, wantSlices: 2}},
		{"dual-stack pod not ready", updatePod(metricsPod("two-a", "two", false, "10.0.2.1", "fd00::2:1")), map[string]float64{
			successes: 7, addedCount: 11, addedSum: 6, changedSum: 11, updates: 8, desired: 4}},
		{"dual-stack pod ready", updatePod(metricsPod("two-a", "two", true, "10.0.2.1", "fd00::2:1")), map[string]float64{
			successes: 8, addedCount: 13, changedSum: 13, updates: 10, desired: 4}},
		{"single-stack pod not ready", updatePod(metricsPod("one-b", "one", false, "10.0.1.2")), map[string]float64{
			successes: 9, addedCount: 14, changedSum: 14, updates: 11, desired: 4}},
		{"dual-stack pod deleted", func(c *fake.Clientset) error {
			return c.CoreV1().Pods("ns").Delete(ctx, "two-b", metav1.DeleteOptions{})
		}, map[string]float64{successes: 10, addedCount: 16, removedSum: 2, changedSum: 16, updates: 13, desired: 3, numSlices: 2}},
		// A Service being deleted: upstream creates no slice for it, but
		// counts the slices it would create as changed and as existing.
		{"dual-stack service deleting", func(c *fake.Clientset) error {
			_, err := c.CoreV1().Services("ns").Update(ctx, deleting, metav1.UpdateOptions{})
			return err
		}, map[string]float64{successes: 11, addedCount: 18, changedSum: 16, desired: 3}},
		{"pod of deleting service", create(metricsPod("two-c", "two", true, "10.0.2.3", "fd00::2:3")), map[string]float64{
			successes: 12, addedCount: 20, addedSum: 8, changedSum: 18, updates: 15, desired: 4, numSlices: 2}},
		{"pod of deleting service filling its slice", create(metricsPod("two-d", "two", true, "10.0.2.4", "fd00::2:4")), map[string]float64{
			successes: 13, addedCount: 22, addedSum: 10, changedSum: 20, creates: 3, updates: 17, desired: 5, numSlices: 2, wantSlices: 2}},
		// A slice each address type would create, but does not.
		{"pod of deleting service beyond its slice", create(metricsPod("two-e", "two", true, "10.0.2.5", "fd00::2:5")), map[string]float64{
			successes: 14, addedCount: 24, addedSum: 12, changedSum: 22, creates: 3, updates: 17, desired: 6, numSlices: 3, wantSlices: 3}},
		{"dual-stack service deleted", func(c *fake.Clientset) error {
			return c.CoreV1().Services("ns").Delete(ctx, "two", metav1.DeleteOptions{})
		}, map[string]float64{successes: 15, addedCount: 24, desired: 2, numSlices: 1, wantSlices: 1}},
		{"single-stack service deleted", func(c *fake.Clientset) error {
			return c.CoreV1().Services("ns").Delete(ctx, "one", metav1.DeleteOptions{})
		}, map[string]float64{successes: 16, desired: 0, numSlices: 0, wantSlices: 0}},
	}
	for _, s := range []*ctlSide{up, ours} {
		if _, err := s.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	runCtlMetricSteps(t, up, ours, steps)
	want := []string{
		"endpoint_slice_controller_changes",
		"endpoint_slice_controller_desired_endpoint_slices",
		"endpoint_slice_controller_endpoints_added_per_sync",
		"endpoint_slice_controller_endpoints_desired",
		"endpoint_slice_controller_endpoints_removed_per_sync",
		"endpoint_slice_controller_endpointslices_changed_per_sync",
		"endpoint_slice_controller_num_endpoint_slices",
		"endpoint_slice_controller_syncs",
	}
	for i, s := range []*ctlSide{up, ours} {
		names := slices.Sorted(maps.Keys(metricShapes(familiesOf(t, s.g, metricsSubsystem))))
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("side %d's controller metrics (-want +got):\n%s", i, diff)
		}
	}
}

// failFirst makes the first create or update (verb) of a slice of the
// named Service and address type fail with err; later ones go through.
func failFirst(c *fake.Clientset, verb, service string, at discovery.AddressType, err error) {
	var done atomic.Bool
	c.PrependReactor(verb, "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		// A create or an update action: both carry the object.
		s := a.(k8stesting.CreateAction).GetObject().(*discovery.EndpointSlice)
		if s.Labels[discovery.LabelServiceName] != service || s.AddressType != at || done.Swap(true) {
			return false, nil, nil
		}
		return true, nil, err
	})
}

// TestControllerMetricsMatchUpstreamOnWriteFailures is
// TestControllerMetricsMatchUpstream with failed writes: upstream
// reconciles each address type on its own, so a write that fails ends
// the writes of its address type only, and that type's slices-changed
// observation, while the other address type is written and observed; a
// create refused because the namespace is terminating does the same
// without an error (the sync succeeds, and is not retried). A failed
// sync is retried a second later, which the steps include.
func TestControllerMetricsMatchUpstreamOnWriteFailures(t *testing.T) {
	up, ours := startCtlSide(t, true), startCtlSide(t, false)
	resetUpstreamControllerMetrics()
	const (
		addedCount   = "endpoint_slice_controller_endpoints_added_per_sync{}_count"
		addedSum     = "endpoint_slice_controller_endpoints_added_per_sync{}_sum"
		changedCount = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=}_count"
		changedSum   = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=}_sum"
		creates      = "endpoint_slice_controller_changes{operation=create}"
		updates      = "endpoint_slice_controller_changes{operation=update}"
		desired      = "endpoint_slice_controller_endpoints_desired{}"
		numSlices    = "endpoint_slice_controller_num_endpoint_slices{}"
		wantSlices   = "endpoint_slice_controller_desired_endpoint_slices{}"
		successes    = "endpoint_slice_controller_syncs{result=success}"
		failures     = "endpoint_slice_controller_syncs{result=error}"
	)
	terminating := apierrors.NewForbidden(discovery.Resource("endpointslices"), "", errors.New("namespace ns is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace ns is being terminated", Field: "metadata.namespace"}}
	for _, s := range []*ctlSide{up, ours} {
		if _, err := s.client.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		failFirst(s.client, "create", "three", discovery.AddressTypeIPv4, apierrors.NewInternalError(errors.New("etcd is down")))
		failFirst(s.client, "update", "three", discovery.AddressTypeIPv4, apierrors.NewInternalError(errors.New("etcd is down")))
		failFirst(s.client, "create", "four", discovery.AddressTypeIPv4, terminating)
	}
	runCtlMetricSteps(t, up, ours, []ctlMetricStep{
		// The IPv6 placeholder is created and counted; the IPv4 one on
		// the retry, where IPv6 changes nothing.
		{"dual-stack, IPv4 create fails once", createObject(metricsService("three", corev1.IPv4Protocol, corev1.IPv6Protocol)), map[string]float64{
			failures: 1, successes: 1, addedCount: 4, changedCount: 3, changedSum: 2, creates: 2,
			desired: 0, numSlices: 1, wantSlices: 1}},
		// The IPv6 placeholder is updated with the pod and counted; the
		// IPv4 one on the retry (its endpoint added again).
		{"dual-stack pod, IPv4 update fails once", createObject(metricsPod("three-a", "three", true, "10.0.3.1", "fd00::3:1")), map[string]float64{
			failures: 2, successes: 2, addedCount: 8, addedSum: 3, changedCount: 6, changedSum: 4, creates: 2, updates: 2,
			desired: 1, numSlices: 1, wantSlices: 1}},
		// No IPv4 slice, no error and no retry; the IPv6 placeholder is
		// created and counted.
		{"dual-stack, IPv4 create refused: namespace terminating", createObject(metricsService("four", corev1.IPv4Protocol, corev1.IPv6Protocol)), map[string]float64{
			failures: 2, successes: 3, addedCount: 10, changedCount: 7, changedSum: 5, creates: 3,
			desired: 1, numSlices: 2, wantSlices: 2}},
		// The next sync creates the IPv4 slice.
		{"pod of the Service without an IPv4 slice", createObject(metricsPod("four-a", "four", true, "10.0.4.1", "fd00::4:1")), map[string]float64{
			failures: 2, successes: 4, addedCount: 12, addedSum: 5, changedCount: 9, changedSum: 7, creates: 4, updates: 3,
			desired: 2, numSlices: 2, wantSlices: 2}},
	})
}

// TestControllerMetricsMatchUpstreamTopology is
// TestControllerMetricsMatchUpstream for the metrics that depend on a
// Service's routing preference: the topology and traffic_distribution
// labels of endpointslices_changed_per_sync (topology Auto for the
// service.kubernetes.io/topology-mode annotation, which takes precedence
// over trafficDistribution) and services_count_by_traffic_distribution
// (Services with a trafficDistribution in use, a series staying at zero
// once its last Service has stopped using that value). The nodes are in
// two zones, with allocatable CPU, so that Auto hints can be assigned.
// Neither PreferClose nor the Auto annotation depends on a feature gate
// in upstream's controller (it always has a topology cache).
func TestControllerMetricsMatchUpstreamTopology(t *testing.T) {
	up, ours := startCtlSide(t, true), startCtlSide(t, false)
	resetUpstreamControllerMetrics()
	const (
		pcCount    = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=PreferClose}_count"
		pcSum      = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=PreferClose}_sum"
		autoCount  = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Auto,traffic_distribution=}_count"
		autoSum    = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Auto,traffic_distribution=}_sum"
		plainCount = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=}_count"
		plainSum   = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=}_sum"
		byTD       = "endpoint_slice_controller_services_count_by_traffic_distribution{traffic_distribution=PreferClose}"
		creates    = "endpoint_slice_controller_changes{operation=create}"
		updates    = "endpoint_slice_controller_changes{operation=update}"
		successes  = "endpoint_slice_controller_syncs{result=success}"
	)
	preferClose := corev1.ServiceTrafficDistributionPreferClose
	pc := metricsService("pc", corev1.IPv4Protocol)
	pc.Spec.TrafficDistribution = &preferClose
	auto := metricsService("auto", corev1.IPv4Protocol)
	auto.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Auto"}
	onNode := func(p *corev1.Pod, node string) *corev1.Pod {
		p.Spec.NodeName = node
		return p
	}
	update := func(svc *corev1.Service, change func(*corev1.Service)) func(c *fake.Clientset) error {
		svc = svc.DeepCopy()
		change(svc)
		return func(c *fake.Clientset) error {
			_, err := c.CoreV1().Services("ns").Update(context.Background(), svc, metav1.UpdateOptions{})
			return err
		}
	}
	for _, s := range []*ctlSide{up, ours} {
		for _, n := range []*corev1.Node{ctlNode("n1", "zone-a", "4"), ctlNode("n2", "zone-b", "4")} {
			if _, err := s.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	runCtlMetricSteps(t, up, ours, []ctlMetricStep{
		{"PreferClose Service", createObject(pc), map[string]float64{
			successes: 1, pcCount: 1, pcSum: 1, creates: 1, byTD: 1}},
		{"pod of PreferClose Service", createObject(onNode(metricsPod("pc-a", "pc", true, "10.0.1.1"), "n1")), map[string]float64{
			successes: 2, pcCount: 2, pcSum: 2, updates: 1, byTD: 1}},
		{"Auto Service", createObject(auto), map[string]float64{
			successes: 3, autoCount: 1, autoSum: 1, creates: 2, byTD: 1}},
		{"pod of Auto Service in one zone", createObject(onNode(metricsPod("auto-a", "auto", true, "10.0.2.1"), "n1")), map[string]float64{
			successes: 4, autoCount: 2, autoSum: 2, updates: 2}},
		{"pod of Auto Service in the other zone", createObject(onNode(metricsPod("auto-b", "auto", true, "10.0.2.2"), "n2")), map[string]float64{
			successes: 5, autoCount: 3, autoSum: 3, updates: 3}},
	})
	// Both sides gave the Auto Service's endpoints hints for their zones.
	for i, s := range []*ctlSide{up, ours} {
		got := map[string]string{}
		slices, err := s.slices.List(labels.Set{discovery.LabelServiceName: "auto"}.AsSelector())
		if err != nil {
			t.Fatal(err)
		}
		for _, es := range slices {
			for _, e := range es.Endpoints {
				if e.Hints != nil {
					for _, z := range e.Hints.ForZones {
						got[e.Addresses[0]] += z.Name
					}
				}
			}
		}
		if diff := cmp.Diff(map[string]string{"10.0.2.1": "zone-a", "10.0.2.2": "zone-b"}, got); diff != "" {
			t.Errorf("side %d: the Auto Service's hints (-want +got):\n%s", i, diff)
		}
	}
	runCtlMetricSteps(t, up, ours, []ctlMetricStep{
		// The annotation wins: still Auto, and not counted as PreferClose.
		{"Auto Service with PreferClose", update(auto, func(s *corev1.Service) { s.Spec.TrafficDistribution = &preferClose }), map[string]float64{
			successes: 6, autoCount: 4, autoSum: 3, byTD: 1}},
		// Hints removed; no Service counts as PreferClose any more.
		{"PreferClose Service without trafficDistribution", update(pc, func(s *corev1.Service) { s.Spec.TrafficDistribution = nil }), map[string]float64{
			successes: 7, plainCount: 1, plainSum: 1, updates: 4, byTD: 0}},
		// trafficDistribution takes over from the annotation.
		{"Auto Service loses the annotation, keeps PreferClose", update(auto, func(s *corev1.Service) {
			s.Annotations = nil
			s.Spec.TrafficDistribution = &preferClose
		}), map[string]float64{successes: 8, pcCount: 3, byTD: 1}},
		{"Auto Service, now PreferClose, deleted", func(c *fake.Clientset) error {
			return c.CoreV1().Services("ns").Delete(context.Background(), "auto", metav1.DeleteOptions{})
		}, map[string]float64{successes: 9, byTD: 0}},
	})
}
