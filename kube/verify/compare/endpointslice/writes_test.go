package endpointslicecompare

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	upstream "k8s.io/endpointslice"
	"k8s.io/endpointslice/topologycache"
	upstreamutil "k8s.io/endpointslice/util"
	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
	"github.com/fairslice/fairslice/kube/internal/fixture"
)

// upstreamSide is upstream's EndpointSlice reconciler (the one
// upstream's controller calls from syncService) on its own fake
// clientset, synced by the test as the controller's syncService would:
// list the selected pods and the managed slices, then Reconcile.
type upstreamSide struct {
	t      *testing.T
	client *fake.Clientset
	rec    *upstream.Reconciler
}

func newUpstreamSide(t *testing.T, nodes ...*corev1.Node) *upstreamSide {
	t.Helper()
	client := fake.NewClientset()
	endpointslicetest.ActAsAPIServer(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	for _, n := range nodes {
		if err := factory.Core().V1().Nodes().Informer().GetStore().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	rec := upstream.NewReconciler(client, factory.Core().V1().Nodes().Lister(), 100, upstreamutil.NewEndpointSliceTracker(),
		topologycache.NewTopologyCache(), record.NewFakeRecorder(1000), endpointslice.ControllerName, upstream.WithPreferSameTrafficDistributionEnabled(true))
	return &upstreamSide{t: t, client: client, rec: rec}
}

func (u *upstreamSide) sync(svc *corev1.Service, pods []*corev1.Pod) {
	u.t.Helper()
	var selected []*corev1.Pod
	sel := labels.Set(svc.Spec.Selector).AsSelectorPreValidated()
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			selected = append(selected, p)
		}
	}
	list, err := u.client.DiscoveryV1().EndpointSlices(svc.Namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.Set{discovery.LabelServiceName: svc.Name, discovery.LabelManagedBy: endpointslice.ControllerName}.String()})
	if err != nil {
		u.t.Fatal(err)
	}
	existing := make([]*discovery.EndpointSlice, len(list.Items))
	for i := range list.Items {
		existing[i] = &list.Items[i]
	}
	if err := u.rec.Reconcile(klog.Background(), svc, selected, existing, time.Time{}); err != nil {
		u.t.Fatalf("upstream Reconcile: %v", err)
	}
}

func (u *upstreamSide) writes() int { return sliceWrites(u.client) }

// sliceWrites counts the create, update and delete calls on EndpointSlices.
func sliceWrites(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "endpointslices" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			n++
		}
	}
	return n
}

// ourSide is fairslice's controller on its own fake clientset, with
// informers that are never started: the test puts pods into their stores
// itself and syncs the Service with SyncService, so that it decides what
// the controller sees at each sync.
type ourSide struct {
	t       *testing.T
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	pods    cache.Store
	c       *endpointslice.Controller
}

func newOurSide(t *testing.T, objs ...runtime.Object) *ourSide {
	t.Helper()
	client := fake.NewClientset(objs...)
	endpointslicetest.ActAsAPIServer(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := endpointslice.NewControllerWithOptions(context.Background(), factory.Core().V1().Pods(), factory.Core().V1().Services(),
		factory.Core().V1().Nodes(), factory.Discovery().V1().EndpointSlices(), client,
		endpointslice.ControllerOptions{EventRecorder: record.NewFakeRecorder(1000), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatalf("NewControllerWithOptions: %v", err)
	}
	// Run with an ended context shuts the controller's queues down.
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		c.Run(ctx, 0)
	})
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Service:
			err = factory.Core().V1().Services().Informer().GetStore().Add(o)
		case *corev1.Node:
			err = factory.Core().V1().Nodes().Informer().GetStore().Add(o)
		default:
			t.Fatalf("newOurSide: unexpected %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &ourSide{t: t, client: client, factory: factory, pods: factory.Core().V1().Pods().Informer().GetStore(), c: c}
}

// syncSlicesToStore makes the slice informer show exactly the slices in
// the fake API server.
func (s *ourSide) syncSlicesToStore() {
	s.t.Helper()
	list, err := s.client.DiscoveryV1().EndpointSlices("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	objs := make([]any, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
	}
	if err := s.factory.Discovery().V1().EndpointSlices().Informer().GetStore().Replace(objs, ""); err != nil {
		s.t.Fatal(err)
	}
}

func (s *ourSide) writes() int { return sliceWrites(s.client) }

// TestBatchedWritesNoMoreThanUpstream replays the side-by-side e2e
// test's bursts deterministically: pods become ready, are deleted, and
// are replaced in batches of random sizes, one sync of the Service per
// batch (as when a burst outruns the controller's syncs), and the
// controller's SyncService and upstream's reconciler (on its own fake
// clientset) each sync after every batch. The controller must write no
// more than upstream over each phase.
func TestBatchedWritesNoMoreThanUpstream(t *testing.T) {
	node := fixture.Node("n1", "zone-a", "4")
	svc := fixture.Service("web")
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 1))
		ours := newOurSide(t, svc, node)
		up := newUpstreamSide(t, node)
		live := map[int]*corev1.Pod{}
		podList := func() []*corev1.Pod {
			out := make([]*corev1.Pod, 0, len(live))
			for _, p := range live {
				out = append(out, p)
			}
			return out
		}
		rv := 1
		sync := func() {
			t.Helper()
			ours.syncSlicesToStore()
			if err := ours.c.SyncService(context.Background(), "ns/web"); err != nil {
				t.Fatalf("seed %d: syncService: %v", seed, err)
			}
			up.sync(svc, podList())
		}
		phase := func(name string, indexes []int, apply func(i int)) {
			t.Helper()
			o0, u0 := ours.writes(), up.writes()
			for len(indexes) > 0 {
				n := min(len(indexes), 1+rng.IntN(40))
				for _, i := range indexes[:n] {
					apply(i)
				}
				indexes = indexes[n:]
				sync()
			}
			o, u := ours.writes()-o0, up.writes()-u0
			t.Logf("seed %d %-10s writes: upstream %4d, fairslice %4d", seed, name, u, o)
			if o > u {
				t.Errorf("seed %d %s: fairslice wrote %d times, upstream %d: want no more than upstream", seed, name, o, u)
			}
		}
		ready := func(i int) {
			rv++
			p := fixture.Pod("web", i, true, "n1")
			p.ResourceVersion = strconv.Itoa(rv)
			live[i] = p
			if err := ours.pods.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		del := func(i int) {
			p := live[i]
			delete(live, i)
			if err := ours.pods.Delete(p); err != nil {
				t.Fatal(err)
			}
		}
		phase("scale-up", seq(0, 500), ready)
		phase("scale-down", seq(50, 500), del)
		phase("replace", seq(0, 50), func(i int) { del(i); ready(1000 + i) })
	}
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
