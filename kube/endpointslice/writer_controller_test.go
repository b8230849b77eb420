package endpointslice

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
	"github.com/fairslice/fairslice/kube/internal/fixture"
	"github.com/fairslice/fairslice/slicer"
)

// mapSource is a Source of VMs per Service key: the number of VMs, all
// ready; a key absent means the Service's slices go.
type mapSource struct {
	mu  sync.Mutex
	vms map[string]int
}

func (s *mapSource) set(key string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 0 {
		delete(s.vms, key)
		return
	}
	s.vms[key] = n
}

func (s *mapSource) Keys() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.vms {
		out = append(out, k)
	}
	return out, nil
}

func (s *mapSource) Desired(key string) (*corev1.Service, []slicer.Group, error) {
	s.mu.Lock()
	n, ok := s.vms[key]
	s.mu.Unlock()
	if !ok {
		return nil, nil, nil
	}
	svc := fixture.Service(strings.TrimPrefix(key, "ns/"), func(s *corev1.Service) { s.Spec.Selector = nil })
	var eps []ExternalEndpoint
	for i := range n {
		eps = append(eps, ExternalEndpoint{Addresses: []string{fmt.Sprintf("10.2.%d.%d", i/250, i%250+1)}, Serving: true,
			Ports: []slicer.Port{{Name: "http", Port: 8080}}})
	}
	groups, err := GroupsFrom(svc, eps)
	return svc, groups, err
}

// waitFor polls cond until it holds, failing the test at the deadline.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within the test's deadline", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// endpointsOfService returns the number of endpoints and slices of the
// Writer's slices of Service ns/name in the fake API server.
func endpointsOfService(t *testing.T, client *fake.Clientset, name string) (endpoints, slices int) {
	t.Helper()
	for _, s := range listSlices(t, client) {
		if s.Labels[discovery.LabelServiceName] == name && s.Labels[discovery.LabelManagedBy] == writerName {
			endpoints += len(s.Endpoints)
			slices++
		}
	}
	return endpoints, slices
}

// runSingleReplica runs a single-replica WriterController of src with
// two workers on client until the test ends.
func runSingleReplica(t *testing.T, ctx context.Context, client *fake.Clientset, src Source) *WriterController {
	t.Helper()
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := NewWriterController(client, factory.Discovery().V1().EndpointSlices(), src,
		WriterControllerOptions{Writer: WriterOptions{ControllerName: writerName}, SingleReplica: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	factory.Start(runCtx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(runCtx) })
	t.Cleanup(func() { stop(); wg.Wait(); factory.Shutdown() })
	return c
}

func TestWriterControllerSyncsChangesAndDeletesFromSource(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // after runSingleReplica's cleanup
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := fake.NewClientset()
	endpointslicetest.ActAsAPIServer(client)
	src := &mapSource{vms: map[string]int{"ns/a": 150, "ns/b": 3}}
	c := runSingleReplica(t, ctx, client, src)

	waitFor(t, ctx, "the source's Services written", func() bool {
		a, as := endpointsOfService(t, client, "a")
		b, _ := endpointsOfService(t, client, "b")
		return a == 150 && as == 2 && b == 3
	})
	src.set("ns/a", 260)
	c.Changed("ns/a")
	waitFor(t, ctx, "a change the source reported written", func() bool {
		a, as := endpointsOfService(t, client, "a")
		return a == 260 && as == 3
	})
	src.set("ns/b", -1)
	c.Changed("ns/b")
	waitFor(t, ctx, "a Service the source dropped deleted", func() bool {
		_, bs := endpointsOfService(t, client, "b")
		return bs == 0
	})
	if a, as := endpointsOfService(t, client, "a"); a != 260 || as != 3 {
		t.Errorf("Service a: %d endpoints in %d slices, want 260 in 3 (no duplicate)", a, as)
	}
}

// TestWriterControllerDeletesSlicesOfServicesTheSourceDroppedWhileDown:
// becoming leader queues the Services the Writer has slices of, not only
// the source's, so slices of a Service dropped while no replica ran go.
func TestWriterControllerDeletesSlicesOfServicesTheSourceDroppedWhileDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	old := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone-x", UID: "gone-uid", Generation: 1,
		Labels: map[string]string{discovery.LabelServiceName: "gone", discovery.LabelManagedBy: writerName}},
		AddressType: discovery.AddressTypeIPv4}
	client := fake.NewClientset(old)
	endpointslicetest.ActAsAPIServer(client)
	runSingleReplica(t, ctx, client, &mapSource{vms: map[string]int{}})
	waitFor(t, ctx, "the orphaned slice deleted", func() bool { _, n := endpointsOfService(t, client, "gone"); return n == 0 })
}

func TestWriterControllerRetriesStaleAndHeldSyncs(t *testing.T) {
	c := &WriterController{}
	q := newKeyQueue("test", maxSyncBackOff)
	defer q.ShutDown()
	ctx := context.Background()
	c.handle(ctx, q, "ns/stale", fmt.Errorf("service ns/stale: %w", ErrStaleInformer))
	if got := q.NumRequeues("ns/stale"); got != 1 {
		t.Errorf("NumRequeues after a stale sync = %d, want 1 (retried with backoff)", got)
	}
	c.handle(ctx, q, "ns/held", &HeldError{RetryAfter: time.Hour})
	if got := q.NumRequeues("ns/held"); got != 0 {
		t.Errorf("NumRequeues after a held sync = %d, want 0 (not a failure)", got)
	}
	if q.Len() != 0 {
		t.Errorf("queue length after a held sync of an hour = %d, want 0 (queued for when the hold ends)", q.Len())
	}
	c.handle(ctx, q, "ns/stale", nil)
	if got := q.NumRequeues("ns/stale"); got != 0 {
		t.Errorf("NumRequeues after a successful sync = %d, want 0 (forgotten)", got)
	}
}

func TestNewWriterControllerRefusesBadOptions(t *testing.T) {
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Discovery().V1().EndpointSlices()
	_, err := NewWriterController(fake.NewClientset(), inf, nil, WriterControllerOptions{
		Writer:  WriterOptions{ControllerName: writerName, Requeue: func(string) {}},
		Workers: -1, ResyncPeriod: -time.Second,
		Lease: LeaseOptions{Name: "Bad_Name", LeaseDuration: time.Second, RenewDeadline: 2 * time.Second},
	})
	for _, w := range []string{"source is nil", "Writer.Requeue", "Workers -1", "ResyncPeriod -1s", `Lease.Namespace "": required`,
		`Lease.Name "Bad_Name"`, "Lease durations 1s, 2s, 2s"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("NewWriterController(bad options) = %v, want it to name %q", err, w)
		}
	}
}

// TestWriterControllerOnlyTheLeaderWrites: of two replicas on one Lease,
// only the one holding it writes; when it dies (without releasing the
// Lease), the other takes over once the Lease expires and carries on
// from the slices written, with no duplicate and no lost endpoint.
func TestWriterControllerOnlyTheLeaderWrites(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client := fake.NewClientset()
	endpointslicetest.ActAsAPIServer(client)
	src := &mapSource{vms: map[string]int{"ns/a": 120}}
	var leaders atomic.Int32
	var overlap atomic.Bool
	type replica struct {
		c       *WriterController
		stop    context.CancelFunc
		wg      sync.WaitGroup
		leading atomic.Bool
		factory informers.SharedInformerFactory
	}
	start := func(id string) *replica {
		r := &replica{factory: informers.NewSharedInformerFactory(client, 0)}
		c, err := NewWriterController(client, r.factory.Discovery().V1().EndpointSlices(), src, WriterControllerOptions{
			Writer: WriterOptions{ControllerName: writerName},
			Lease: LeaseOptions{Namespace: "ns", Name: "writer", Identity: id,
				LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		c.leading = func(on bool) {
			if on && leaders.Add(1) > 1 {
				overlap.Store(true)
			} else if !on {
				leaders.Add(-1)
			}
			r.leading.Store(on)
		}
		r.c = c
		var rctx context.Context
		rctx, r.stop = context.WithCancel(ctx)
		r.factory.Start(rctx.Done())
		r.wg.Go(func() { c.Run(rctx) })
		return r
	}
	stop := func(r *replica) { r.stop(); r.wg.Wait(); r.factory.Shutdown() }

	a := start("a")
	waitFor(t, ctx, "replica a leading", a.leading.Load)
	b := start("b")
	defer stop(b)
	waitFor(t, ctx, "replica b seeing a as the leader", func() bool {
		le := b.c.elector.Load()
		return le != nil && le.GetLeader() == "a"
	})
	waitFor(t, ctx, "Service a written", func() bool { n, s := endpointsOfService(t, client, "a"); return n == 120 && s == 2 })
	if b.leading.Load() {
		t.Fatal("replica b leads while a holds the Lease")
	}
	stop(a) // killed: the Lease is not released
	src.set("ns/a", 230)
	b.c.Changed("ns/a") // dropped unless b leads: becoming leader syncs all
	waitFor(t, ctx, "replica b leading", b.leading.Load)
	waitFor(t, ctx, "the change written by b", func() bool { n, s := endpointsOfService(t, client, "a"); return n == 230 && s == 3 })
	if overlap.Load() {
		t.Error("two replicas led at once")
	}
}
