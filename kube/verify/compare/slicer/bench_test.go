package slicercompare

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	upstream "k8s.io/endpointslice"
	upstreamutil "k8s.io/endpointslice/util"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/internal/upstream/slicerun"
	"github.com/fairslice/fairslice/slicer"
)

// fleet is a Service with n ready pods on three nodes in three zones, and
// its slices of 100 as the controller left them.
type fleet struct {
	svc      *corev1.Service
	pods     []*corev1.Pod
	nodes    corelisters.NodeLister
	existing []*discovery.EndpointSlice
}

func newFleet(b *testing.B, n int) *fleet {
	f := &fleet{svc: &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "web", UID: "web-uid"},
		Spec: corev1.ServiceSpec{
			ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}}
	var nodes []*corev1.Node
	for i := range 3 {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", i)},
		}})
	}
	f.nodes = slicerun.NodeLister(nodes)
	for i := range n {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("web-%d", i), UID: "u"},
			Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%3)},
			Status: corev1.PodStatus{
				Phase: corev1.PodRunning, PodIP: ip4(i), PodIPs: []corev1.PodIP{{IP: ip4(i)}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			},
		}
		f.pods = append(f.pods, p)
	}
	// The slices the controller would have written, named as the API
	// server would have named them.
	var conv endpointslice.Converter
	desired, err := conv.Desired(f.svc, f.pods, f.nodes)
	if err != nil {
		b.Fatal(err)
	}
	plan, err := slicer.Reconcile(endpointslice.ServiceFacts(f.svc, time.Time{}), desired, nil, slicer.Options{})
	if err != nil {
		b.Fatal(err)
	}
	creates, _, _, err := endpointslice.Objects(plan, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i, s := range creates {
		s.Name = fmt.Sprintf("%s%05d", s.GenerateName, i)
		s.GenerateName = ""
		s.Annotations = nil
	}
	f.existing = creates
	return f
}

func ip4(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }

// upstreamReconciler returns upstream's Reconciler over a fake clientset
// holding f's slices, and checks that a sync of f writes nothing.
func (f *fleet) upstreamReconciler(b *testing.B) (*upstream.Reconciler, func() int) {
	client := slicerun.NewFakeClient(f.existing)
	r := upstream.NewReconciler(client, f.nodes, 100, upstreamutil.NewEndpointSliceTracker(), nil, &record.FakeRecorder{},
		slicer.DefaultControllerName)
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
	if err := r.Reconcile(logr.Discard(), f.svc, f.pods, f.existing, time.Time{}); err != nil {
		b.Fatal(err)
	}
	if n := writes(); n != 0 {
		b.Fatalf("upstream: a no-op sync made %d writes", n)
	}
	return r, writes
}

// perEndpoint reports allocations and time per endpoint, after one
// untimed warm-up run (which fills reusable buffers and the converter's
// memory of objects, as in a controller's steady state).
func perEndpoint(b *testing.B, n int, run func()) {
	run()
	runtime.GC() // start from a clean heap, whatever ran before
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for b.Loop() {
		run()
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/float64(n), "allocs/endpoint")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N)/float64(n), "ns/endpoint")
}

// BenchmarkNoOpSync is a sync of a Service whose 10,000 endpoints already
// sit in 100 correct slices: upstream's Reconcile (fake clientset) versus
// the kube adapter plus the slicer from the same k8s.io/api objects.
func BenchmarkNoOpSync(b *testing.B) {
	benchNoOp(b, 10000, true)
}

func benchNoOp(b *testing.B, n int, withUpstream bool) {
	f := newFleet(b, n)
	if withUpstream {
		b.Run("impl=upstream", func(b *testing.B) {
			r, writes := f.upstreamReconciler(b)
			perEndpoint(b, n, func() {
				if err := r.Reconcile(logr.Discard(), f.svc, f.pods, f.existing, time.Time{}); err != nil {
					b.Fatal(err)
				}
			})
			if w := writes(); w != 0 {
				b.Fatalf("%d writes", w)
			}
		})
	}
	b.Run("impl=fairslice", func(b *testing.B) {
		s, _ := endpointslice.NewSyncer(slicer.Options{})
		// The pods as a lister returns them: in a different order every
		// time (informer stores are maps).
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		orders := make([][]*corev1.Pod, 4)
		for i := range orders {
			orders[i] = slices.Clone(f.pods)
			rng.Shuffle(n, func(a, b int) { orders[i][a], orders[i][b] = orders[i][b], orders[i][a] })
		}
		k := 0
		perEndpoint(b, n, func() {
			k++
			plan, skipped, err := s.Plan(endpointslice.ServiceFacts(f.svc, time.Time{}), f.svc, orders[k%len(orders)], f.nodes, f.existing)
			if err != nil || skipped != nil || plan.Writes() != 0 || len(plan.Unchanged) != len(f.existing) {
				b.Fatalf("plan with %d writes, error %v %v", plan.Writes(), skipped, err)
			}
		})
	})
}

// BenchmarkNoOpSyncFull is the same no-op sync through the Converter and
// the slicer without the Syncer's memory of the last no-op sync: what
// every sync with a changed object costs before it writes.
func BenchmarkNoOpSyncFull(b *testing.B) {
	const n = 10000
	f := newFleet(b, n)
	b.Run("impl=fairslice", func(b *testing.B) {
		var conv endpointslice.Converter
		core, _ := slicer.NewReconciler(slicer.Options{})
		perEndpoint(b, n, func() { fullNoOp(b, core, &conv, f.svc, f.pods, f.nodes, f.existing) })
	})
}

// BenchmarkNoOpSyncCore is the slicer alone on the same no-op sync, from
// inputs converted once.
func BenchmarkNoOpSyncCore(b *testing.B) {
	const n = 10000
	f := newFleet(b, n)
	var conv endpointslice.Converter
	desired, _ := conv.Desired(f.svc, f.pods, f.nodes)
	existing, _ := conv.Existing(f.existing)
	svc := endpointslice.ServiceFacts(f.svc, time.Time{})
	core, _ := slicer.NewReconciler(slicer.Options{})
	b.Run("impl=fairslice", func(b *testing.B) {
		perEndpoint(b, n, func() {
			if plan, err := core.Reconcile(svc, desired, existing); err != nil || plan.Writes() != 0 {
				b.Fatalf("plan with %d writes, error %v", plan.Writes(), err)
			}
		})
	})
}

// BenchmarkOneChanged is a sync of the same Service after one pod of
// 10,000 turned not ready: one slice is rewritten. Ours includes building
// the discovery/v1 object to send.
func BenchmarkOneChanged(b *testing.B) {
	const n = 10000
	f := newFleet(b, n)
	pods := append([]*corev1.Pod(nil), f.pods...)
	p := pods[500].DeepCopy()
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	pods[500] = p
	trigger := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	b.Run("impl=upstream", func(b *testing.B) {
		r, writes := f.upstreamReconciler(b)
		perEndpoint(b, n, func() {
			if err := r.Reconcile(logr.Discard(), f.svc, pods, f.existing, trigger); err != nil {
				b.Fatal(err)
			}
			if w := writes(); w != 1 {
				b.Fatalf("%d writes, want 1", w)
			}
		})
	})
	b.Run("impl=fairslice", func(b *testing.B) {
		s, _ := endpointslice.NewSyncer(slicer.Options{})
		perEndpoint(b, n, func() {
			plan, skipped, err := s.Plan(endpointslice.ServiceFacts(f.svc, trigger), f.svc, pods, f.nodes, f.existing)
			if err != nil || skipped != nil || len(plan.Updates) != 1 || plan.Writes() != 1 {
				b.Fatalf("plan with %d writes, error %v %v", plan.Writes(), skipped, err)
			}
			_, updates, _, err := endpointslice.Objects(plan, f.existing)
			if err != nil || len(updates) != 1 {
				b.Fatal("no update object")
			}
		})
	})
}

// BenchmarkNoOpSweep grows the Service from 100 to 100,000 endpoints
// (upstream up to 10,000: it takes over a second per sync beyond).
func BenchmarkNoOpSweep(b *testing.B) {
	for _, n := range []int{100, 1000, 10000, 100000} {
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			benchNoOp(b, n, n <= 10000)
		})
	}
}

// BenchmarkNoOpSweepCore is the slicer alone over the same sizes.
func BenchmarkNoOpSweepCore(b *testing.B) {
	for _, n := range []int{100, 1000, 10000, 100000} {
		b.Run(fmt.Sprintf("endpoints=%d/impl=fairslice", n), func(b *testing.B) {
			f := newFleet(b, n)
			var conv endpointslice.Converter
			desired, _ := conv.Desired(f.svc, f.pods, f.nodes)
			existing, _ := conv.Existing(f.existing)
			svc := endpointslice.ServiceFacts(f.svc, time.Time{})
			core, _ := slicer.NewReconciler(slicer.Options{})
			perEndpoint(b, n, func() {
				if plan, err := core.Reconcile(svc, desired, existing); err != nil || plan.Writes() != 0 {
					b.Fatalf("plan with %d writes, error %v", plan.Writes(), err)
				}
			})
		})
	}
}

// BenchmarkInitialSync creates all slices of a new Service.
func BenchmarkInitialSync(b *testing.B) {
	const n = 10000
	f := newFleet(b, n)
	b.Run("impl=upstream", func(b *testing.B) {
		perEndpoint(b, n, func() {
			client := slicerun.NewFakeClient(nil)
			r := upstream.NewReconciler(client, f.nodes, 100, upstreamutil.NewEndpointSliceTracker(), nil, &record.FakeRecorder{},
				slicer.DefaultControllerName)
			if err := r.Reconcile(logr.Discard(), f.svc, f.pods, nil, time.Time{}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("impl=fairslice", func(b *testing.B) {
		var conv endpointslice.Converter
		core, _ := slicer.NewReconciler(slicer.Options{})
		perEndpoint(b, n, func() {
			desired, _ := conv.Desired(f.svc, f.pods, f.nodes)
			plan, err := core.Reconcile(endpointslice.ServiceFacts(f.svc, time.Time{}), desired, nil)
			if err != nil || len(plan.Creates) != n/100 {
				b.Fatalf("%d creates, error %v", len(plan.Creates), err)
			}
			if _, _, _, err := endpointslice.Objects(plan, nil); err != nil {
				b.Fatal(err)
			}
		})
	})
}
