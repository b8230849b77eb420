package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/verify/internal/realapiserver"
	"github.com/fairslice/fairslice/slicer"
)

const (
	wfNamespace  = "wf"
	wfServices   = 10
	wfPerService = 150 // at the start; churn moves it around
	wfRounds     = 60  // 150 ms apart; the leader is killed at round 20, so the churn goes on through the handover
	wfKillRound  = 20
	wfLease      = "writer-failover"
)

// wfSource is the replicas' Source: the desired endpoints (address ->
// serving) of each Service, changed by the test's churn.
type wfSource struct {
	mu   sync.Mutex
	svcs map[string]*corev1.Service // by name
	want map[string]map[string]bool
}

func (s *wfSource) Keys() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for name := range s.want {
		keys = append(keys, wfNamespace+"/"+name)
	}
	return keys, nil
}

func (s *wfSource) Desired(key string) (*corev1.Service, []slicer.Group, error) {
	s.mu.Lock()
	name := key[len(wfNamespace)+1:]
	svc, want := s.svcs[name], maps.Clone(s.want[name])
	s.mu.Unlock()
	if svc == nil {
		return nil, nil, nil
	}
	groups, err := endpointslice.GroupsFrom(svc, wrExternal(want))
	return svc, groups, err
}

func (s *wfSource) snapshot() map[string]map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]map[string]bool{}
	for name, m := range s.want {
		out[name] = maps.Clone(m)
	}
	return out
}

// churn changes n Services: add addresses added, remove removed, flip
// readiness flipped; it returns the names changed.
func (s *wfSource) churn(r *rand.Rand, round, n, add, remove, flip int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var changed []string
	for _, i := range r.Perm(wfServices)[:n] {
		name := fmt.Sprintf("f-%02d", i)
		m := maps.Clone(s.want[name])
		addrs := slices.Sorted(maps.Keys(m))
		r.Shuffle(len(addrs), func(a, b int) { addrs[a], addrs[b] = addrs[b], addrs[a] })
		rm := min(remove, len(addrs)-10)
		for _, a := range addrs[:rm] {
			delete(m, a)
		}
		for _, a := range addrs[rm:min(rm+flip, len(addrs))] {
			m[a] = !m[a]
		}
		for k := range add {
			m[fmt.Sprintf("10.%d.%d.%d", 100+i, 10+round, k+1)] = true
		}
		s.want[name] = m
		changed = append(changed, name)
	}
	return changed
}

// wfReplica is one replica of the Writer's controller, with its own
// client (its writes counted) and informer.
type wfReplica struct {
	id      string
	c       *endpointslice.WriterController
	factory informers.SharedInformerFactory
	writes  esWrites
	stop    context.CancelFunc
	done    chan struct{}
}

func startWFReplica(t *testing.T, srv *realapiserver.Server, src *wfSource, id string) *wfReplica {
	t.Helper()
	r := &wfReplica{id: id, done: make(chan struct{})}
	client := wrClient(srv, &r.writes, nil, 0)
	r.factory = informers.NewSharedInformerFactory(client, 0)
	c, err := endpointslice.NewWriterController(client, r.factory.Discovery().V1().EndpointSlices(), src,
		endpointslice.WriterControllerOptions{
			Writer:  endpointslice.WriterOptions{ControllerName: wrController},
			Workers: 4,
			Lease: endpointslice.LeaseOptions{Namespace: wfNamespace, Name: wfLease, Identity: id,
				LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond},
		})
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.factory.Start(ctx.Done())
	go func() { defer close(r.done); c.Run(ctx) }()
	t.Cleanup(r.kill)
	return r
}

// kill stops the replica as a crash would (the Lease is not released)
// and waits for its goroutines.
func (r *wfReplica) kill() {
	r.stop()
	<-r.done
	r.factory.Shutdown()
}

// wfHolder returns the identity holding the Lease, "" if none.
func wfHolder(ctx context.Context, c kubernetes.Interface) string {
	l, err := c.CoordinationV1().Leases(wfNamespace).Get(ctx, wfLease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// wfCheck compares the Writer's slices of every Service with want: it
// returns what is wrong (an address in two slices, missing, extra or of
// the wrong readiness), the number of slices and the least number the
// endpoints fit in.
func wfCheck(ctx context.Context, c kubernetes.Interface, want map[string]map[string]bool) (problems []string, slicesN, least int, err error) {
	list, err := c.DiscoveryV1().EndpointSlices(wfNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{discovery.LabelManagedBy: wrController}.String()})
	if err != nil {
		return nil, 0, 0, err
	}
	bySvc := map[string][]discovery.EndpointSlice{}
	for _, s := range list.Items {
		bySvc[s.Labels[discovery.LabelServiceName]] = append(bySvc[s.Labels[discovery.LabelServiceName]], s)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		seen := map[string]bool{}
		for _, s := range bySvc[name] {
			for _, e := range s.Endpoints {
				a := e.Addresses[0]
				if _, dup := seen[a]; dup {
					problems = append(problems, fmt.Sprintf("%s: %s in two slices", name, a))
				}
				seen[a] = e.Conditions.Ready != nil && *e.Conditions.Ready
			}
		}
		for a, ready := range want[name] {
			if got, ok := seen[a]; !ok || got != ready {
				problems = append(problems, fmt.Sprintf("%s: %s ready=%v present=%v, want ready=%v", name, a, got, ok, ready))
			}
		}
		for a := range seen {
			if _, ok := want[name][a]; !ok {
				problems = append(problems, fmt.Sprintf("%s: %s not desired", name, a))
			}
		}
		slicesN += len(bySvc[name])
		least += (len(want[name]) + esMax - 1) / esMax
	}
	return problems, slicesN, least, nil
}

// TestWriterControllerFailoverUnderChurn runs two replicas of a
// WriterController with leader election on one real kube-apiserver, 10
// selectorless Services of 150 endpoints each, churned (addresses added,
// removed, readiness flipped) over 60 rounds 150 ms apart; at round 20,
// the replica holding the Lease is killed (its Lease not released), so
// the survivor takes over while the churn goes on. Before the kill
// the standby must have written nothing; after it, the survivor takes
// the Lease and carries on, and once the churn ends the slices must hold
// exactly the desired endpoints, each once: no duplicate slice from two
// writers, no endpoint lost in the handover. It logs the numbers
// BENCHMARKS.md reports.
func TestWriterControllerFailoverUnderChurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	srv := realapiserver.Start(t, realapiserver.Options{})
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wfNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	src := &wfSource{svcs: map[string]*corev1.Service{}, want: map[string]map[string]bool{}}
	for i := range wfServices {
		name := fmt.Sprintf("f-%02d", i)
		svc, err := srv.Client.CoreV1().Services(wfNamespace).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Ports: wrPorts}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		src.svcs[name] = svc
		src.want[name] = map[string]bool{}
		for k := range wfPerService {
			src.want[name][fmt.Sprintf("10.%d.%d.%d", 100+i, k/200, k%200+1)] = k%7 != 0
		}
	}
	replicas := map[string]*wfReplica{}
	for _, id := range []string{"replica-a", "replica-b"} {
		replicas[id] = startWFReplica(t, srv, src, id)
	}
	var leader string
	for leader == "" {
		if leader = wfHolder(ctx, srv.Client); leader == "" {
			select {
			case <-ctx.Done():
				t.Fatal("no replica took the Lease")
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	standby := "replica-a"
	if leader == standby {
		standby = "replica-b"
	}
	t.Logf("leader %s, standby %s", leader, standby)

	r := rand.New(rand.NewPCG(44, 1))
	var killedAt time.Time
	var standbyBefore, leaderWrites int64
	var tookOver time.Duration // from the kill to the survivor's first write (to the next churn round)
	for round := range wfRounds {
		for _, name := range src.churn(r, round, 3, 8, 8, 8) {
			for _, rep := range replicas {
				rep.c.Changed(wfNamespace + "/" + name) // as each replica's informer handler would
			}
		}
		if round == wfKillRound {
			standbyBefore = replicas[standby].writes.total()
			replicas[leader].kill()
			killedAt = time.Now()
			leaderWrites = replicas[leader].writes.total()
		}
		time.Sleep(150 * time.Millisecond) // churn's pace, not a bound
		if !killedAt.IsZero() && tookOver == 0 && replicas[standby].writes.total() > standbyBefore {
			tookOver = time.Since(killedAt)
		}
	}
	if standbyBefore != 0 {
		t.Errorf("the standby wrote %d times while %s held the Lease, want 0", standbyBefore, leader)
	}
	want := src.snapshot()
	churnEnd := time.Now()
	var problems []string
	var slicesN, least int
	for {
		var err error
		problems, slicesN, least, err = wfCheck(ctx, srv.Client, want)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the slices never held the desired endpoints after the failover; %d problems, the first: %v", len(problems), problems[:min(5, len(problems))])
		case <-time.After(100 * time.Millisecond):
		}
	}
	settled := time.Since(churnEnd)
	if tookOver == 0 {
		tookOver = time.Since(killedAt)
	}
	if got := wfHolder(ctx, srv.Client); got != standby {
		t.Errorf("Lease held by %q after the failover, want %q", got, standby)
	}
	if got := replicas[leader].writes.total(); got != leaderWrites {
		t.Errorf("the killed leader wrote %d times after it was killed", got-leaderWrites)
	}
	endpoints := 0
	for _, m := range want {
		endpoints += len(m)
	}
	t.Logf("failover: %d Services, %d endpoints after %d churn rounds; leader %s killed at round %d; writes: killed leader %s, survivor %s; "+
		"standby writes before the kill %d; survivor's first write %v after the kill; slices %d (least %d); "+
		"desired endpoints all held, each once, %v after the last change",
		wfServices, endpoints, wfRounds, leader, wfKillRound, &replicas[leader].writes, &replicas[standby].writes,
		standbyBefore, tookOver.Round(10*time.Millisecond), slicesN, least, settled.Round(10*time.Millisecond))
}
