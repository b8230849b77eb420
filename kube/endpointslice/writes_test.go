package endpointslice

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	upstream "k8s.io/endpointslice"
	"k8s.io/endpointslice/topologycache"
	upstreamutil "k8s.io/endpointslice/util"
	"k8s.io/klog/v2"
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
	actAsAPIServer(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	for _, n := range nodes {
		if err := factory.Core().V1().Nodes().Informer().GetStore().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	rec := upstream.NewReconciler(client, factory.Core().V1().Nodes().Lister(), 100, upstreamutil.NewEndpointSliceTracker(),
		topologycache.NewTopologyCache(), record.NewFakeRecorder(1000), ControllerName, upstream.WithPreferSameTrafficDistributionEnabled(true))
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
		LabelSelector: labels.Set{discovery.LabelServiceName: svc.Name, discovery.LabelManagedBy: ControllerName}.String()})
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

func (u *upstreamSide) writes() int {
	n := 0
	for _, a := range u.client.Actions() {
		if a.GetResource().Resource == "endpointslices" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			n++
		}
	}
	return n
}

func total(m map[string]int) int { return m["create"] + m["update"] + m["delete"] }

// TestBatchedWritesNoMoreThanUpstream replays the side-by-side e2e
// test's bursts deterministically: pods become ready, are deleted, and
// are replaced in batches of random sizes, one sync of the Service per
// batch (as when a burst outruns the controller's syncs), and the
// controller's syncService and upstream's reconciler (on its own fake
// clientset) each sync after every batch. The controller must write no
// more than upstream over each phase.
func TestBatchedWritesNoMoreThanUpstream(t *testing.T) {
	node := ctlNode("n1", "zone-a", "4")
	svc := ctlService("web")
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 1))
		ours := newCtlFixture(t, ControllerOptions{}, svc, node)
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
			if err := ours.c.syncService(context.Background(), "ns/web"); err != nil {
				t.Fatalf("seed %d: syncService: %v", seed, err)
			}
			up.sync(svc, podList())
		}
		phase := func(name string, indexes []int, apply func(i int)) {
			t.Helper()
			o0, u0 := total(ours.writes()), up.writes()
			for len(indexes) > 0 {
				n := min(len(indexes), 1+rng.IntN(40))
				for _, i := range indexes[:n] {
					apply(i)
				}
				indexes = indexes[n:]
				sync()
			}
			o, u := total(ours.writes())-o0, up.writes()-u0
			t.Logf("seed %d %-10s writes: upstream %4d, fairslice %4d", seed, name, u, o)
			if o > u {
				t.Errorf("seed %d %s: fairslice wrote %d times, upstream %d: want no more than upstream", seed, name, o, u)
			}
		}
		ready := func(i int) {
			rv++
			p := ctlPod("web", i, true, "n1")
			p.ResourceVersion = strconv.Itoa(rv)
			live[i] = p
			ours.store(p)
		}
		del := func(i int) {
			p := live[i]
			delete(live, i)
			if err := ours.factory.Core().V1().Pods().Informer().GetStore().Delete(p); err != nil {
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
