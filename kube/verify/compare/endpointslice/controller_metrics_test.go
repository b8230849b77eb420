package endpointslicecompare

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	"k8s.io/client-go/kubernetes/fake"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/legacyregistry"
	upstreammetrics "k8s.io/endpointslice/metrics"
	upstreamctl "k8s.io/kubernetes/pkg/controller/endpointslice"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/internal/fixture"
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
	client, factory := newSideClient()
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
		c, err := endpointslice.NewControllerWithOptions(ctx, pods, svcs, nodes, eps, client, endpointslice.ControllerOptions{MaxEndpointsPerSlice: 3, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		run, side.g = c.Run, reg
	}
	runSide(t, ctx, cancel, factory, run)
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

// Series of the EndpointSlice controller's metrics, as the side-by-side
// tests name them (family{labels}, _count and _sum for histograms).
const (
	mAddedCount   = "endpoint_slice_controller_endpoints_added_per_sync{}_count"
	mAddedSum     = "endpoint_slice_controller_endpoints_added_per_sync{}_sum"
	mRemovedSum   = "endpoint_slice_controller_endpoints_removed_per_sync{}_sum"
	mChangedCount = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=}_count"
	mChangedSum   = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=}_sum"
	mCreates      = "endpoint_slice_controller_changes{operation=create}"
	mUpdates      = "endpoint_slice_controller_changes{operation=update}"
	mDesired      = "endpoint_slice_controller_endpoints_desired{}"
	mNumSlices    = "endpoint_slice_controller_num_endpoint_slices{}"
	mWantSlices   = "endpoint_slice_controller_desired_endpoint_slices{}"
	mSuccesses    = "endpoint_slice_controller_syncs{result=success}"
	mFailures     = "endpoint_slice_controller_syncs{result=error}"
	mPcCount      = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=PreferClose}_count"
	mPcSum        = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Disabled,traffic_distribution=PreferClose}_sum"
	mAutoCount    = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Auto,traffic_distribution=}_count"
	mAutoSum      = "endpoint_slice_controller_endpointslices_changed_per_sync{topology=Auto,traffic_distribution=}_sum"
	mByTD         = "endpoint_slice_controller_services_count_by_traffic_distribution{traffic_distribution=PreferClose}"
)

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
			mSuccesses: 1, mAddedCount: 1, mAddedSum: 0, mChangedCount: 1, mChangedSum: 1, mCreates: 1,
			mDesired: 0, mNumSlices: 1, mWantSlices: 1}},
		// The placeholder is reused.
		{"single-stack pod", create(metricsPod("one-a", "one", true, "10.0.1.1")), map[string]float64{
			mSuccesses: 2, mAddedCount: 2, mAddedSum: 1, mChangedSum: 2, mCreates: 1, mUpdates: 1, mDesired: 1, mNumSlices: 1}},
		{"single-stack second pod", create(metricsPod("one-b", "one", true, "10.0.1.2")), map[string]float64{
			mSuccesses: 3, mAddedCount: 3, mAddedSum: 2, mChangedSum: 3, mUpdates: 2, mDesired: 2, mNumSlices: 1, mWantSlices: 1}},
		// From here, observed once per address type, and the gauges count
		// one address type of the dual-stack Service.
		{"dual-stack", create(metricsService("two", corev1.IPv4Protocol, corev1.IPv6Protocol)), map[string]float64{
			mSuccesses: 4, mAddedCount: 5, mAddedSum: 2, mChangedCount: 5, mChangedSum: 5, mCreates: 3,
			mDesired: 2, mNumSlices: 2, mWantSlices: 2}},
		{"dual-stack pod", create(metricsPod("two-a", "two", true, "10.0.2.1", "fd00::2:1")), map[string]float64{
			mSuccesses: 5, mAddedCount: 7, mAddedSum: 4, mChangedSum: 7, mUpdates: 4, mDesired: 3, mNumSlices: 2}},
		{"dual-stack second pod", create(metricsPod("two-b", "two", true, "10.0.2.2", "fd00::2:2")), map[string]float64{
			mSuccesses: 6, mAddedCount: 9, mAddedSum: 6, mChangedSum: 9, mUpdates: 6, mDesired: 4, mNumSlices: 2, mWantSlices: 2}},
		{"dual-stack pod not ready", updatePod(metricsPod("two-a", "two", false, "10.0.2.1", "fd00::2:1")), map[string]float64{
			mSuccesses: 7, mAddedCount: 11, mAddedSum: 6, mChangedSum: 11, mUpdates: 8, mDesired: 4}},
		{"dual-stack pod ready", updatePod(metricsPod("two-a", "two", true, "10.0.2.1", "fd00::2:1")), map[string]float64{
			mSuccesses: 8, mAddedCount: 13, mChangedSum: 13, mUpdates: 10, mDesired: 4}},
		{"single-stack pod not ready", updatePod(metricsPod("one-b", "one", false, "10.0.1.2")), map[string]float64{
			mSuccesses: 9, mAddedCount: 14, mChangedSum: 14, mUpdates: 11, mDesired: 4}},
		{"dual-stack pod deleted", func(c *fake.Clientset) error {
			return c.CoreV1().Pods("ns").Delete(ctx, "two-b", metav1.DeleteOptions{})
		}, map[string]float64{mSuccesses: 10, mAddedCount: 16, mRemovedSum: 2, mChangedSum: 16, mUpdates: 13, mDesired: 3, mNumSlices: 2}},
		// A Service being deleted: upstream creates no slice for it, but
		// counts the slices it would create as changed and as existing.
		{"dual-stack service deleting", func(c *fake.Clientset) error {
			_, err := c.CoreV1().Services("ns").Update(ctx, deleting, metav1.UpdateOptions{})
			return err
		}, map[string]float64{mSuccesses: 11, mAddedCount: 18, mChangedSum: 16, mDesired: 3}},
		{"pod of deleting service", create(metricsPod("two-c", "two", true, "10.0.2.3", "fd00::2:3")), map[string]float64{
			mSuccesses: 12, mAddedCount: 20, mAddedSum: 8, mChangedSum: 18, mUpdates: 15, mDesired: 4, mNumSlices: 2}},
		{"pod of deleting service filling its slice", create(metricsPod("two-d", "two", true, "10.0.2.4", "fd00::2:4")), map[string]float64{
			mSuccesses: 13, mAddedCount: 22, mAddedSum: 10, mChangedSum: 20, mCreates: 3, mUpdates: 17, mDesired: 5, mNumSlices: 2, mWantSlices: 2}},
		// A slice each address type would create, but does not.
		{"pod of deleting service beyond its slice", create(metricsPod("two-e", "two", true, "10.0.2.5", "fd00::2:5")), map[string]float64{
			mSuccesses: 14, mAddedCount: 24, mAddedSum: 12, mChangedSum: 22, mCreates: 3, mUpdates: 17, mDesired: 6, mNumSlices: 3, mWantSlices: 3}},
		{"dual-stack service deleted", func(c *fake.Clientset) error {
			return c.CoreV1().Services("ns").Delete(ctx, "two", metav1.DeleteOptions{})
		}, map[string]float64{mSuccesses: 15, mAddedCount: 24, mDesired: 2, mNumSlices: 1, mWantSlices: 1}},
		{"single-stack service deleted", func(c *fake.Clientset) error {
			return c.CoreV1().Services("ns").Delete(ctx, "one", metav1.DeleteOptions{})
		}, map[string]float64{mSuccesses: 16, mDesired: 0, mNumSlices: 0, mWantSlices: 0}},
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
			mFailures: 1, mSuccesses: 1, mAddedCount: 4, mChangedCount: 3, mChangedSum: 2, mCreates: 2,
			mDesired: 0, mNumSlices: 1, mWantSlices: 1}},
		// The IPv6 placeholder is updated with the pod and counted; the
		// IPv4 one on the retry (its endpoint added again).
		{"dual-stack pod, IPv4 update fails once", createObject(metricsPod("three-a", "three", true, "10.0.3.1", "fd00::3:1")), map[string]float64{
			mFailures: 2, mSuccesses: 2, mAddedCount: 8, mAddedSum: 3, mChangedCount: 6, mChangedSum: 4, mCreates: 2, mUpdates: 2,
			mDesired: 1, mNumSlices: 1, mWantSlices: 1}},
		// No IPv4 slice, no error and no retry; the IPv6 placeholder is
		// created and counted.
		{"dual-stack, IPv4 create refused: namespace terminating", createObject(metricsService("four", corev1.IPv4Protocol, corev1.IPv6Protocol)), map[string]float64{
			mFailures: 2, mSuccesses: 3, mAddedCount: 10, mChangedCount: 7, mChangedSum: 5, mCreates: 3,
			mDesired: 1, mNumSlices: 2, mWantSlices: 2}},
		// The next sync creates the IPv4 slice.
		{"pod of the Service without an IPv4 slice", createObject(metricsPod("four-a", "four", true, "10.0.4.1", "fd00::4:1")), map[string]float64{
			mFailures: 2, mSuccesses: 4, mAddedCount: 12, mAddedSum: 5, mChangedCount: 9, mChangedSum: 7, mCreates: 4, mUpdates: 3,
			mDesired: 2, mNumSlices: 2, mWantSlices: 2}},
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
		for _, n := range []*corev1.Node{fixture.Node("n1", "zone-a", "4"), fixture.Node("n2", "zone-b", "4")} {
			if _, err := s.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	runCtlMetricSteps(t, up, ours, []ctlMetricStep{
		{"PreferClose Service", createObject(pc), map[string]float64{
			mSuccesses: 1, mPcCount: 1, mPcSum: 1, mCreates: 1, mByTD: 1}},
		{"pod of PreferClose Service", createObject(onNode(metricsPod("pc-a", "pc", true, "10.0.1.1"), "n1")), map[string]float64{
			mSuccesses: 2, mPcCount: 2, mPcSum: 2, mUpdates: 1, mByTD: 1}},
		{"Auto Service", createObject(auto), map[string]float64{
			mSuccesses: 3, mAutoCount: 1, mAutoSum: 1, mCreates: 2, mByTD: 1}},
		{"pod of Auto Service in one zone", createObject(onNode(metricsPod("auto-a", "auto", true, "10.0.2.1"), "n1")), map[string]float64{
			mSuccesses: 4, mAutoCount: 2, mAutoSum: 2, mUpdates: 2}},
		{"pod of Auto Service in the other zone", createObject(onNode(metricsPod("auto-b", "auto", true, "10.0.2.2"), "n2")), map[string]float64{
			mSuccesses: 5, mAutoCount: 3, mAutoSum: 3, mUpdates: 3}},
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
			mSuccesses: 6, mAutoCount: 4, mAutoSum: 3, mByTD: 1}},
		// Hints removed; no Service counts as PreferClose any more.
		{"PreferClose Service without trafficDistribution", update(pc, func(s *corev1.Service) { s.Spec.TrafficDistribution = nil }), map[string]float64{
			mSuccesses: 7, mChangedCount: 1, mChangedSum: 1, mUpdates: 4, mByTD: 0}},
		// trafficDistribution takes over from the annotation.
		{"Auto Service loses the annotation, keeps PreferClose", update(auto, func(s *corev1.Service) {
			s.Annotations = nil
			s.Spec.TrafficDistribution = &preferClose
		}), map[string]float64{mSuccesses: 8, mPcCount: 3, mByTD: 1}},
		{"Auto Service, now PreferClose, deleted", func(c *fake.Clientset) error {
			return c.CoreV1().Services("ns").Delete(context.Background(), "auto", metav1.DeleteOptions{})
		}, map[string]float64{mSuccesses: 9, mByTD: 0}},
	})
}
