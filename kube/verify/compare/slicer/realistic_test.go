package slicercompare

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	upstream "k8s.io/endpointslice"
	upstreamutil "k8s.io/endpointslice/util"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/internal/upstream/slicerun"
	"github.com/fairslice/fairslice/slicer"
)

// realFleet is the realistic fixture: a Service with two ports (one
// targeting a container port by name), n ready pods spread over 30 nodes
// in 3 zones, its slices as upstream's Reconciler wrote them (endpoints in
// upstream's map order, ports in its hash order), and the pods in the
// order an informer lists them (a different shuffle per list).
type realFleet struct {
	svc      *corev1.Service
	pods     []*corev1.Pod
	orders   [][]*corev1.Pod // informer orders of pods
	nodeIdx  cache.Indexer
	nodes    corelisters.NodeLister
	nodeObjs []*corev1.Node
	existing []*discovery.EndpointSlice
}

const (
	realNodes = 30
	realZones = 3
)

func newRealFleet(tb testing.TB, n int) *realFleet {
	f := &realFleet{svc: &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "web", UID: "web-uid",
			Labels: map[string]string{"app": "web", "tier": "frontend"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
				{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("metrics")},
			},
		},
	}}
	f.nodeIdx = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i := range realNodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("node-%02d", i), ResourceVersion: "1",
			Labels: map[string]string{
				corev1.LabelTopologyZone: fmt.Sprintf("zone-%c", 'a'+i%realZones),
				corev1.LabelHostname:     fmt.Sprintf("node-%02d", i),
			},
		}}
		f.nodeObjs = append(f.nodeObjs, node)
		if err := f.nodeIdx.Add(node); err != nil {
			tb.Fatal(err)
		}
	}
	f.nodes = corelisters.NewNodeLister(f.nodeIdx)
	for i := range n {
		f.pods = append(f.pods, realPod(i))
	}
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	f.orders = make([][]*corev1.Pod, 4)
	for i := range f.orders {
		f.orders[i] = slices.Clone(f.pods)
		rng.Shuffle(n, func(a, b int) { f.orders[i][a], f.orders[i][b] = f.orders[i][b], f.orders[i][a] })
	}
	// The slices as upstream's controller wrote them.
	client := slicerun.NewFakeClient(nil)
	r := upstream.NewReconciler(client, f.nodes, slicer.DefaultMaxEndpointsPerSlice, upstreamutil.NewEndpointSliceTracker(), nil,
		&record.FakeRecorder{}, slicer.DefaultControllerName)
	if err := r.Reconcile(logr.Discard(), f.svc, f.orders[0], nil, time.Time{}); err != nil {
		tb.Fatal(err)
	}
	list, err := client.DiscoveryV1().EndpointSlices("bench").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range list.Items {
		// Decoded from JSON, as an informer receives them: their strings
		// are their own, not shared with the pods.
		data, err := json.Marshal(&list.Items[i])
		if err != nil {
			tb.Fatal(err)
		}
		s := &discovery.EndpointSlice{}
		if err := json.Unmarshal(data, s); err != nil {
			tb.Fatal(err)
		}
		s.ResourceVersion = "1"
		f.existing = append(f.existing, s)
	}
	rng.Shuffle(len(f.existing), func(a, b int) { f.existing[a], f.existing[b] = f.existing[b], f.existing[a] })
	return f
}

func realPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "bench", Name: fmt.Sprintf("web-7d9f8b6c5-%05d", i), UID: types.UID(fmt.Sprintf("pod-uid-%05d", i)),
			ResourceVersion: "1", Labels: map[string]string{"app": "web"},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%02d", i%realNodes),
			Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{
				{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
				{Name: "metrics", ContainerPort: 9091, Protocol: corev1.ProtocolTCP},
			}}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip4(i), PodIPs: []corev1.PodIP{{IP: ip4(i)}},
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			},
		},
	}
}

// upstreamReconciler returns upstream's Reconciler over a fake clientset
// holding f's slices, and a function counting the writes since its last
// call.
func (f *realFleet) upstreamReconciler(tb testing.TB) (*upstream.Reconciler, func() int) {
	client := slicerun.NewFakeClient(f.existing)
	r := upstream.NewReconciler(client, f.nodes, slicer.DefaultMaxEndpointsPerSlice, upstreamutil.NewEndpointSliceTracker(), nil,
		&record.FakeRecorder{}, slicer.DefaultControllerName)
	writes := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() != "list" {
				n++
			}
		}
		client.ClearActions()
		return n
	}
	return r, writes
}

// TestRealisticFixtureNoOp: upstream and fairslice both find nothing to
// write in the realistic fixture, so the no-op benchmarks measure no-ops.
func TestRealisticFixtureNoOp(t *testing.T) {
	f := newRealFleet(t, 2000)
	r, writes := f.upstreamReconciler(t)
	if err := r.Reconcile(logr.Discard(), f.svc, f.orders[1], f.existing, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if w := writes(); w != 0 {
		t.Fatalf("upstream: a no-op sync made %d writes", w)
	}
	var conv endpointslice.Converter
	desired, err := conv.Desired(f.svc, f.orders[1], f.nodes)
	if err != nil {
		t.Fatal(err)
	}
	existing, err := conv.Existing(f.existing)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := slicer.Reconcile(endpointslice.ServiceFacts(f.svc, time.Time{}), desired, existing, slicer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Writes() != 0 || len(plan.Unchanged) != len(f.existing) {
		t.Fatalf("fairslice: no-op plan has %d creates, %d updates, %d deletes, %d unchanged of %d",
			len(plan.Creates), len(plan.Updates), len(plan.Deletes), len(plan.Unchanged), len(f.existing))
	}
}

const realN = 10000

// BenchmarkRealisticOneChanged: one pod of 10,000 turns not ready; one
// slice is rewritten. Ours goes through a warm Syncer (the worker's) and
// builds the discovery/v1 object to send. Each sync gets a new copy of the
// changed pod (as an informer hands over a new object for every update),
// made inside the timed sync on both sides, so that ours converts it every
// time instead of finding the object it already converted.
func BenchmarkRealisticOneChanged(b *testing.B) {
	f := newRealFleet(b, realN)
	changed := make([][]*corev1.Pod, len(f.orders))
	at := make([]int, len(f.orders)) // index of the changed pod in each order
	for i, o := range f.orders {
		changed[i] = slices.Clone(o)
		at[i] = slices.Index(o, f.pods[4321])
	}
	p := f.pods[4321].DeepCopy()
	p.Status.Conditions[3].Status = corev1.ConditionFalse
	p.ResourceVersion = "2"
	// listing k: the k-th order with a new copy of the changed pod.
	listing := func(k int) []*corev1.Pod {
		i := k % len(changed)
		changed[i][at[i]] = p.DeepCopy()
		return changed[i]
	}
	trigger := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	b.Run("impl=upstream", func(b *testing.B) {
		r, writes := f.upstreamReconciler(b)
		k := 0
		perEndpoint(b, realN, func() {
			k++
			if err := r.Reconcile(logr.Discard(), f.svc, listing(k), f.existing, trigger); err != nil {
				b.Fatal(err)
			}
			if w := writes(); w != 1 {
				b.Fatalf("%d writes, want 1", w)
			}
		})
	})
	b.Run("impl=fairslice", func(b *testing.B) {
		s, _ := endpointslice.NewSyncer(slicer.Options{})
		facts := endpointslice.ServiceFacts(f.svc, trigger)
		// The worker's steady state: it synced the unchanged pods before.
		if _, _, err := s.Plan(facts, f.svc, f.orders[0], f.nodes, f.existing); err != nil {
			b.Fatal(err)
		}
		k := 0
		perEndpoint(b, realN, func() {
			k++
			plan, skipped, err := s.Plan(facts, f.svc, listing(k), f.nodes, f.existing)
			if err != nil || skipped != nil || len(plan.Updates) != 1 || plan.Writes() != 1 {
				b.Fatalf("plan with %d writes, error %v %v", plan.Writes(), skipped, err)
			}
			_, updates, _, err := endpointslice.Objects(plan, f.existing)
			if err != nil || len(updates) != 1 {
				b.Fatal("no update object", err)
			}
		})
	})
}

// BenchmarkRealisticNoOpFresh: a sync that writes nothing, with a new
// Converter every sync (what upstream does on every sync: it keeps no
// memory of converted objects). The slicer.Reconciler is the worker's.
func BenchmarkRealisticNoOpFresh(b *testing.B) {
	f := newRealFleet(b, realN)
	b.Run("impl=upstream", f.upstreamNoOp)
	b.Run("impl=fairslice", func(b *testing.B) {
		core, _ := slicer.NewReconciler(slicer.Options{})
		k := 0
		perEndpoint(b, realN, func() {
			k++
			var conv endpointslice.Converter
			f.reconcileNoOp(b, core, &conv, k)
		})
	})
}

// BenchmarkRealisticNoOpSyncer: the same no-op sync through a warm
// Syncer, pods listed in a different order every time.
func BenchmarkRealisticNoOpSyncer(b *testing.B) {
	f := newRealFleet(b, realN)
	b.Run("impl=upstream", f.upstreamNoOp)
	b.Run("impl=fairslice", func(b *testing.B) {
		s, _ := endpointslice.NewSyncer(slicer.Options{})
		facts := endpointslice.ServiceFacts(f.svc, time.Time{})
		k := 0
		perEndpoint(b, realN, func() {
			k++
			f.syncerNoOp(b, s, facts, k)
		})
	})
}

// BenchmarkRealisticNodeUpdate: between no-op syncs, a kubelet replaces a
// Node object (a status heartbeat: new object, new resourceVersion, zone
// unchanged). It must cost no more than a no-op sync through the Syncer:
// update=node against update=none, which does the same work outside the
// timer (copying a Node and storing it, in an indexer the sync does not
// read), so that both pay the same for stopping the timer and for the
// caches that work leaves behind. Compare with benchstat -col /update.
func BenchmarkRealisticNodeUpdate(b *testing.B) {
	f := newRealFleet(b, realN)
	for _, update := range []string{"node", "none"} {
		b.Run("impl=fairslice/update="+update, func(b *testing.B) {
			idx := f.nodeIdx
			if update == "none" {
				idx = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			}
			s, _ := endpointslice.NewSyncer(slicer.Options{})
			facts := endpointslice.ServiceFacts(f.svc, time.Time{})
			k := 0
			perEndpoint(b, realN, func() {
				k++
				b.StopTimer()
				node := f.nodeObjs[k%realNodes].DeepCopy()
				node.ResourceVersion = fmt.Sprint(k + 1)
				node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
					LastHeartbeatTime: metav1.NewTime(time.Unix(int64(k), 0))}}
				if err := idx.Update(node); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				f.syncerNoOp(b, s, facts, k)
			})
		})
	}
}

// BenchmarkRealisticNoOpWarm: the no-op sync through the worker's
// Converter (which remembers the pods) and Reconciler, without the
// Syncer's memory: what a sync with one changed object costs at most.
func BenchmarkRealisticNoOpWarm(b *testing.B) {
	f := newRealFleet(b, realN)
	b.Run("impl=fairslice", func(b *testing.B) {
		core, _ := slicer.NewReconciler(slicer.Options{})
		var conv endpointslice.Converter
		k := 0
		perEndpoint(b, realN, func() {
			k++
			f.reconcileNoOp(b, core, &conv, k)
		})
	})
}

// upstreamNoOp runs upstream's Reconciler on the fleet's unchanged
// Service, pods in a different informer order every sync, and fails on
// any write.
func (f *realFleet) upstreamNoOp(b *testing.B) {
	r, writes := f.upstreamReconciler(b)
	k := 0
	perEndpoint(b, realN, func() {
		k++
		if err := r.Reconcile(logr.Discard(), f.svc, f.orders[k%len(f.orders)], f.existing, time.Time{}); err != nil {
			b.Fatal(err)
		}
		if w := writes(); w != 0 {
			b.Fatalf("%d writes", w)
		}
	})
}

// reconcileNoOp is sync k of the full path without the Syncer's memory:
// conv's Desired and Existing, then core's Reconcile, which must plan no
// write.
func (f *realFleet) reconcileNoOp(b *testing.B, core *slicer.Reconciler, conv *endpointslice.Converter, k int) {
	fullNoOp(b, core, conv, f.svc, f.orders[k%len(f.orders)], f.nodes, f.existing)
}

// fullNoOp runs the full path without the Syncer's memory: conv's Desired
// and Existing, then core's Reconcile, which must plan no write.
func fullNoOp(b *testing.B, core *slicer.Reconciler, conv *endpointslice.Converter, svc *corev1.Service, pods []*corev1.Pod,
	nodes corelisters.NodeLister, existing []*discovery.EndpointSlice) {
	desired, err := conv.Desired(svc, pods, nodes)
	if err != nil {
		b.Fatal(err)
	}
	converted, err := conv.Existing(existing)
	if err != nil {
		b.Fatal(err)
	}
	plan, err := core.Reconcile(endpointslice.ServiceFacts(svc, time.Time{}), desired, converted)
	if err != nil || plan.Writes() != 0 {
		b.Fatalf("plan with %d writes, error %v", plan.Writes(), err)
	}
}

// syncerNoOp is sync k through the Syncer, which must plan no write and
// keep every slice.
func (f *realFleet) syncerNoOp(b *testing.B, s *endpointslice.Syncer, facts slicer.Service, k int) {
	plan, skipped, err := s.Plan(facts, f.svc, f.orders[k%len(f.orders)], f.nodes, f.existing)
	if err != nil || skipped != nil || plan.Writes() != 0 || len(plan.Unchanged) != len(f.existing) {
		b.Fatalf("plan with %d writes, error %v %v", plan.Writes(), skipped, err)
	}
}
