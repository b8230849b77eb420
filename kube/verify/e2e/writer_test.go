//lint:file-ignore SA1019 upstream's mirroring controller, run beside the Writer, reads the deprecated core/v1 Endpoints API
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	upstreamctl "k8s.io/kubernetes/pkg/controller/endpointslice"
	upstreammirror "k8s.io/kubernetes/pkg/controller/endpointslicemirroring"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/verify/internal/realapiserver"
	"github.com/fairslice/fairslice/slicer"
)

const (
	wrController = "fairslice-writer.example.com"
	wrNaiveName  = "naive-writer.example.com"
	wrServices   = 25  // the Writer's churned Services, wrPerService endpoints each
	wrPerService = 200 // 25 × 200 = 5,000 endpoints
	wrPods       = 20  // pods behind w-00 and w-01 (upstream's EndpointSlice controller)
	wrMirrored   = 30  // Endpoints addresses of w-02 and w-03 (upstream's mirroring controller)
	wrRestart    = 500 // more Services of 150 endpoints each, for the restart: 3 slices each (100 + 50 IPv4, an empty IPv6 placeholder: a headless selectorless Service is dual-stack)
	wrLag        = 50 * time.Millisecond
)

// wrAudit records, from the responses to one client's EndpointSlice
// writes, which slices it wrote: the resourceVersions its writes
// produced, the slices it created and deleted, and (for a client that
// must only write slices managed by own) every write to another's slice.
type wrAudit struct {
	own string // "" records only

	mu      sync.Mutex
	rvs     map[string]map[string]bool // slice name -> resourceVersions written
	created map[string]bool
	deleted map[string]bool
	foreign []string
}

func newWRAudit(own string) *wrAudit {
	return &wrAudit{own: own, rvs: map[string]map[string]bool{}, created: map[string]bool{}, deleted: map[string]bool{}}
}

func (a *wrAudit) wrote(name, rv string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rvs[name][rv]
}

func (a *wrAudit) wasDeleted(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.deleted[name]
}

func (a *wrAudit) foreignWrites() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.foreign)
}

// record notes one write: its method, the slice name in the URL ("" for
// a create) and the slice in the response (nil for a delete's).
func (a *wrAudit) record(method, urlName string, resp *discovery.EndpointSlice) {
	a.mu.Lock()
	defer a.mu.Unlock()
	name := urlName
	if resp != nil && resp.Name != "" {
		name = resp.Name
	}
	if a.own != "" {
		switch {
		case method != http.MethodPost && !a.created[name]:
			a.foreign = append(a.foreign, fmt.Sprintf("%s of slice %s, which it did not create", method, name))
		case resp != nil && resp.Labels[discovery.LabelManagedBy] != a.own:
			a.foreign = append(a.foreign, fmt.Sprintf("%s of slice %s managed by %q", method, name, resp.Labels[discovery.LabelManagedBy]))
		}
	}
	switch {
	case method == http.MethodDelete:
		a.deleted[name] = true
	case resp != nil:
		if method == http.MethodPost {
			a.created[name] = true
		}
		if a.rvs[name] == nil {
			a.rvs[name] = map[string]bool{}
		}
		a.rvs[name][resp.ResourceVersion] = true
	}
}

// wrAuditTransport feeds a wrAudit from the successful EndpointSlice
// writes through it (the client must send and accept JSON).
type wrAuditTransport struct {
	next  http.RoundTripper
	audit *wrAudit
}

func (t *wrAuditTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || !strings.Contains(req.URL.Path, "/endpointslices") || req.Method == http.MethodGet ||
		resp.StatusCode/100 != 2 {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	urlName := ""
	if req.Method != http.MethodPost {
		urlName = path.Base(req.URL.Path)
	}
	var es *discovery.EndpointSlice
	if req.Method != http.MethodDelete {
		es = &discovery.EndpointSlice{}
		if err := json.Unmarshal(body, es); err != nil {
			return nil, fmt.Errorf("wrAuditTransport: %s %s: decoding the response: %w", req.Method, req.URL.Path, err)
		}
	}
	t.audit.record(req.Method, urlName, es)
	return resp, nil
}

// wrClient returns a JSON client of srv counting its EndpointSlice
// writes in writes, auditing them in audit (if not nil) and delaying
// its EndpointSlice watches by lag.
func wrClient(srv *realapiserver.Server, writes *esWrites, audit *wrAudit, lag time.Duration) kubernetes.Interface {
	cfg := rest.CopyConfig(srv.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		if audit != nil {
			rt = &wrAuditTransport{next: rt, audit: audit}
		}
		if writes != nil {
			rt = &esCountingTransport{next: rt, writes: writes}
		}
		if lag > 0 {
			rt = &esLaggingTransport{next: rt, lag: lag}
		}
		return rt
	})
	return kubernetes.NewForConfigOrDie(cfg)
}

// wrWriter is a Writer with its own informer.
type wrWriter struct {
	w       *endpointslice.Writer
	factory informers.SharedInformerFactory
	cancel  context.CancelFunc
	stale   atomic.Int64 // Syncs that returned ErrStaleInformer
	// Syncs that failed on a write conflict: the Writer planned from a
	// view older than its own writes, which the stale guard prevents.
	conflicts atomic.Int64
}

// startWRWriter starts a Writer writing through client, its informer
// reading through informerClient, and waits for the informer to sync.
func startWRWriter(t *testing.T, client, informerClient kubernetes.Interface, ownOnly bool) *wrWriter {
	t.Helper()
	var opts []informers.SharedInformerOption
	if ownOnly { // the informer lists and watches only the Writer's slices
		opts = append(opts, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = discovery.LabelManagedBy + "=" + wrController
		}))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(informerClient, 0, opts...)
	w, err := endpointslice.NewWriter(client, factory.Discovery().V1().EndpointSlices(),
		// w-00 and w-01 also select pods on purpose: the test shows the
		// Writer and kube-controller-manager's controller leave each
		// other's slices alone.
		endpointslice.WriterOptions{ControllerName: wrController, AllowSelector: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ww := &wrWriter{w: w, factory: factory, cancel: cancel}
	t.Cleanup(ww.stop)
	factory.Start(ctx.Done())
	wait, waitCancel := context.WithTimeout(ctx, time.Minute)
	defer waitCancel()
	for typ, ok := range factory.WaitForCacheSync(wait.Done()) {
		if !ok {
			t.Fatalf("Writer's informer %v did not sync within a minute", typ)
		}
	}
	return ww
}

func (w *wrWriter) stop() {
	w.cancel()
	w.factory.Shutdown()
}

// sync syncs svc to want, retrying (every 20 ms, until ctx ends) while
// the informer is stale or a write conflicts.
func (w *wrWriter) sync(ctx context.Context, svc *corev1.Service, want map[string]bool) error {
	groups, err := endpointslice.GroupsFrom(svc, wrExternal(want))
	if err != nil {
		return err
	}
	for {
		err := w.w.Sync(ctx, svc, groups)
		switch {
		case errors.Is(err, endpointslice.ErrStaleInformer):
			w.stale.Add(1)
		case apierrors.IsConflict(err): // requeued, as a work queue would
			w.conflicts.Add(1)
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Service %s: still failing when the deadline passed: %w", svc.Name, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

var wrPorts = []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8443)}}

// wrExternal turns a desired state (address -> serving) into the
// Writer's endpoints, in address order.
func wrExternal(want map[string]bool) []endpointslice.ExternalEndpoint {
	var out []endpointslice.ExternalEndpoint
	for _, a := range slices.Sorted(maps.Keys(want)) {
		out = append(out, endpointslice.ExternalEndpoint{Addresses: []string{a}, Serving: want[a],
			Ports: []slicer.Port{{Name: "https", Port: 8443, Protocol: "TCP"}}})
	}
	return out
}

// wrNaive is what hand-rolled controllers do: on every change of a
// Service's endpoints, delete all its slices and create new ones.
type wrNaive struct {
	client kubernetes.Interface // counted
	writes esWrites
}

func (n *wrNaive) sync(ctx context.Context, svc *corev1.Service, want map[string]bool) error {
	list, err := n.client.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{
		discovery.LabelServiceName: svc.Name, discovery.LabelManagedBy: wrNaiveName}.String()})
	if err != nil {
		return err
	}
	for _, s := range list.Items {
		if err := n.client.DiscoveryV1().EndpointSlices(svc.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	addrs := slices.Sorted(maps.Keys(want))
	for from := 0; from < len(addrs); from += esMax {
		es := &discovery.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{GenerateName: svc.Name + "-naive-", Labels: map[string]string{
				discovery.LabelServiceName: svc.Name, discovery.LabelManagedBy: wrNaiveName}},
			AddressType: discovery.AddressTypeIPv4,
			Ports:       []discovery.EndpointPort{{Name: new("https"), Port: new(int32(8443)), Protocol: new(corev1.ProtocolTCP)}},
		}
		for _, a := range addrs[from:min(from+esMax, len(addrs))] {
			es.Endpoints = append(es.Endpoints, discovery.Endpoint{Addresses: []string{a}, Conditions: discovery.EndpointConditions{
				Ready: new(want[a]), Serving: new(want[a]), Terminating: new(false)}})
		}
		if _, err := n.client.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, es, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// wrLatency times, through the test's own watch, each change of a
// Writer's Service from the Sync call to the first moment the Writer's
// slices of it hold exactly the new endpoints.
type wrLatency struct {
	mu      sync.Mutex
	content map[string]map[string]string // Service -> slice -> fingerprint
	pending map[string]wrPending         // Service -> awaited change
	samples []time.Duration
}

type wrPending struct {
	want  string
	start time.Time
}

func wrFingerprint(want map[string]bool) string {
	var b strings.Builder
	for _, a := range slices.Sorted(maps.Keys(want)) {
		fmt.Fprintf(&b, "%s=%v;", a, want[a])
	}
	return b.String()
}

// expect starts timing the change of svc to want.
func (l *wrLatency) expect(svc string, want map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending[svc] = wrPending{want: wrFingerprint(want), start: time.Now()}
}

func (l *wrLatency) observe(obj any, deleted bool) {
	now := time.Now()
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	es, ok := obj.(*discovery.EndpointSlice)
	if !ok || es.Labels[discovery.LabelManagedBy] != wrController {
		return
	}
	svc := es.Labels[discovery.LabelServiceName]
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.content[svc] == nil {
		l.content[svc] = map[string]string{}
	}
	if deleted {
		delete(l.content[svc], es.Name)
	} else {
		l.content[svc][es.Name] = wrFingerprint(wrEndpointsOf([]discovery.EndpointSlice{*es}))
	}
	p, ok := l.pending[svc]
	if !ok {
		return
	}
	merged := map[string]bool{}
	for _, fp := range l.content[svc] {
		for _, kv := range strings.Split(strings.TrimSuffix(fp, ";"), ";") {
			if a, v, ok := strings.Cut(kv, "="); ok {
				merged[a] = v == "true"
			}
		}
	}
	if wrFingerprint(merged) == p.want {
		l.samples = append(l.samples, now.Sub(p.start))
		delete(l.pending, svc)
	}
}

// wrEndpointsOf returns the endpoints of slices as address -> ready.
func wrEndpointsOf(list []discovery.EndpointSlice) map[string]bool {
	out := map[string]bool{}
	for _, s := range list {
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				out[a] = e.Conditions.Ready != nil && *e.Conditions.Ready
			}
		}
	}
	return out
}

// wrMinimum is a lower bound on the writes that take a Service's
// slices from have to want (max endpoints each): every slice holding an
// endpoint removed or changed is written at least once, and the
// endpoints added need the room of enough further slices (a new slice
// has the most room) once those written slices are full.
func wrMinimum(have []discovery.EndpointSlice, want map[string]bool) int {
	old := wrEndpointsOf(have)
	added := 0
	for a := range want {
		if _, ok := old[a]; !ok {
			added++
		}
	}
	writes, room := 0, 0
	for _, s := range have {
		touched, kept := false, 0
		for _, e := range s.Endpoints {
			ready := e.Conditions.Ready != nil && *e.Conditions.Ready
			if w, ok := want[e.Addresses[0]]; !ok || w != ready {
				touched = true
			}
			if _, ok := want[e.Addresses[0]]; ok {
				kept++
			}
		}
		if touched {
			writes++
			room += esMax - kept
		}
	}
	if added > room {
		writes += (added - room + esMax - 1) / esMax
	}
	return writes
}

// wrEnv is one kube-apiserver running upstream's EndpointSlice and
// mirroring controllers, with the Writer's Services on it.
type wrEnv struct {
	t        *testing.T
	srv      *realapiserver.Server
	upstream *wrAudit // both upstream controllers' writes
	writer   *wrAudit // every Writer's writes
	writes   esWrites // every Writer's writes but the restarted one's
	naive    *wrNaive
	latency  *wrLatency

	svcs     []*corev1.Service          // the churned Services, w-00..
	want     map[string]map[string]bool // Service -> address -> serving
	podsOn   map[int]bool               // pod web-i -> ready
	mirror   map[string]map[string]bool // w-02, w-03's Endpoints: address -> ready
	seen     map[string]bool            // upstream slices seen so far
	counts   []wrStepCounts
	rechecks int // upstream slices read again, 2 s later
}

type wrStepCounts struct {
	step                   string
	writer, naive, minimum int64
}

func startWREnv(t *testing.T) *wrEnv {
	t.Helper()
	srv := realapiserver.Start(t, realapiserver.Options{})
	e := &wrEnv{t: t, srv: srv, upstream: newWRAudit(""), writer: newWRAudit(wrController),
		latency: &wrLatency{content: map[string]map[string]string{}, pending: map[string]wrPending{}},
		want:    map[string]map[string]bool{}, podsOn: map[int]bool{}, mirror: map[string]map[string]bool{}, seen: map[string]bool{}}
	e.naive = &wrNaive{}
	e.naive.client = wrClient(srv, &e.naive.writes, nil, 0)

	ctx, cancel := context.WithCancel(context.Background())
	upClient := wrClient(srv, nil, e.upstream, 0)
	factory := informers.NewSharedInformerFactory(upClient, 0)
	pods, svcs, nodes, eps, endpoints := factory.Core().V1().Pods(), factory.Core().V1().Services(), factory.Core().V1().Nodes(),
		factory.Discovery().V1().EndpointSlices(), factory.Core().V1().Endpoints()
	esCtl := upstreamctl.NewController(ctx, pods, svcs, nodes, eps, esMax, upClient, 0)
	mirrorCtl := upstreammirror.NewController(ctx, endpoints, eps, svcs, 1000, upClient, 0)
	watch := informers.NewSharedInformerFactory(srv.Client, 0)
	if _, err := watch.Discovery().V1().EndpointSlices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { e.latency.observe(obj, false) },
		UpdateFunc: func(_, obj any) { e.latency.observe(obj, false) },
		DeleteFunc: func(obj any) { e.latency.observe(obj, true) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	watch.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { esCtl.Run(ctx, 5) })
	wg.Go(func() { mirrorCtl.Run(ctx, 5) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
		watch.Shutdown()
	})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: esNamespace}}
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

func wrAddr(svc, i int) string {
	return fmt.Sprintf("10.%d.%d.%d", 100+svc/100, svc%100*2+i/250, i%250+1)
}

// setup creates the nodes, the churned Services (w-00 and w-01 also
// selecting the web pods, w-02 and w-03 also with an Endpoints object)
// and the pods and Endpoints.
func (e *wrEnv) setup(ctx context.Context) {
	t, c := e.t, e.srv.Client
	if err := esCreateNodes(ctx, c); err != nil {
		t.Fatal(err)
	}
	for i := range wrServices {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%02d", i), Labels: map[string]string{"source": "vms"}},
			Spec: corev1.ServiceSpec{Ports: wrPorts}}
		if i < 2 {
			svc.Spec.Selector = map[string]string{"app": "web"}
		}
		svc, err := c.CoreV1().Services(esNamespace).Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.svcs = append(e.svcs, svc)
		e.want[svc.Name] = map[string]bool{}
	}
	if err := esCreatePods(ctx, c, "web", 0, wrPods, false); err != nil {
		t.Fatal(err)
	}
	for i := range wrPods {
		e.podsOn[i] = true
	}
	if err := esSetReady(ctx, c, "web", 0, wrPods, true); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"w-02", "w-03"} {
		e.mirror[name] = map[string]bool{}
		for i := range wrMirrored {
			e.mirror[name][fmt.Sprintf("10.20%s.0.%d", name[3:], i+1)] = i%5 != 0
		}
		if err := e.writeEndpoints(ctx, name, true); err != nil {
			t.Fatal(err)
		}
	}
}

// writeEndpoints creates or updates the Endpoints object of name from
// e.mirror.
func (e *wrEnv) writeEndpoints(ctx context.Context, name string, create bool) error {
	var sub corev1.EndpointSubset
	for _, a := range slices.Sorted(maps.Keys(e.mirror[name])) {
		if e.mirror[name][a] {
			sub.Addresses = append(sub.Addresses, corev1.EndpointAddress{IP: a})
		} else {
			sub.NotReadyAddresses = append(sub.NotReadyAddresses, corev1.EndpointAddress{IP: a})
		}
	}
	sub.Ports = []corev1.EndpointPort{{Name: "https", Port: 8443, Protocol: corev1.ProtocolTCP}}
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name}, Subsets: []corev1.EndpointSubset{sub}}
	var err error
	if create {
		_, err = e.srv.Client.CoreV1().Endpoints(esNamespace).Create(ctx, ep, metav1.CreateOptions{})
	} else {
		_, err = e.srv.Client.CoreV1().Endpoints(esNamespace).Update(ctx, ep, metav1.UpdateOptions{})
	}
	return err
}

// churnUpstream changes what the upstream controllers write: a pod's
// readiness and a mirrored address's.
func (e *wrEnv) churnUpstream(ctx context.Context, r *rand.Rand) {
	p := r.IntN(wrPods)
	e.podsOn[p] = !e.podsOn[p]
	if err := esSetPodReady(ctx, e.srv.Client, "web", p, e.podsOn[p]); err != nil {
		e.t.Fatal(err)
	}
	name := []string{"w-02", "w-03"}[r.IntN(2)]
	addrs := slices.Sorted(maps.Keys(e.mirror[name]))
	a := addrs[r.IntN(len(addrs))]
	e.mirror[name][a] = !e.mirror[name][a]
	if err := e.writeEndpoints(ctx, name, false); err != nil {
		e.t.Fatal(err)
	}
}

// round syncs every Service whose desired endpoints differ from next's
// through the Writer and the naive writer, counting the writes against
// the minimum, and timing each change.
func (e *wrEnv) round(ctx context.Context, w *wrWriter, next map[string]map[string]bool, counts *wrStepCounts) {
	e.rounds(ctx, w, []map[string]map[string]bool{next}, counts)
}

// rounds is round through each of nexts in turn, each Service synced to
// its next state right after its last (no check between, and the
// minimum counted only for the first).
func (e *wrEnv) rounds(ctx context.Context, w *wrWriter, nexts []map[string]map[string]bool, counts *wrStepCounts) {
	next, last := nexts[0], nexts[len(nexts)-1]
	t := e.t
	all, err := e.srv.Client.DiscoveryV1().EndpointSlices(esNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: discovery.LabelManagedBy + "=" + wrController})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string][]discovery.EndpointSlice{}
	for _, s := range all.Items {
		have[s.Labels[discovery.LabelServiceName]] = append(have[s.Labels[discovery.LabelServiceName]], s)
	}
	var changed []*corev1.Service
	for _, svc := range e.svcs {
		if gocmp.Equal(e.want[svc.Name], next[svc.Name]) {
			continue
		}
		changed = append(changed, svc)
		counts.minimum += int64(wrMinimum(have[svc.Name], next[svc.Name]))
	}
	w0, n0 := e.writes.total(), e.naive.writes.total()
	err = esParallel(0, len(changed), func(i int) error {
		svc := changed[i]
		for _, n := range nexts {
			e.latency.expect(svc.Name, n[svc.Name])
			if err := w.sync(ctx, svc, n[svc.Name]); err != nil {
				return err
			}
			if err := e.naive.sync(ctx, svc, n[svc.Name]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	counts.writer += e.writes.total() - w0
	counts.naive += e.naive.writes.total() - n0
	for _, svc := range changed {
		e.want[svc.Name] = last[svc.Name]
	}
}

// check fails the test on any fight, lost or duplicated endpoint: the
// Writer's (and the naive writer's) slices of each Service hold exactly
// the desired endpoints, each once; the Writer wrote no slice it did not
// create or not labelled as its own; every slice of the upstream
// controllers is at a resourceVersion one of their own writes produced,
// and every one that went away was deleted by them.
func (e *wrEnv) check(ctx context.Context, step string) {
	t := e.t
	t.Helper()
	bad := false
	fail := func(format string, args ...any) {
		t.Helper()
		bad = true
		t.Errorf(format, args...)
	}
	all, err := e.srv.Client.DiscoveryV1().EndpointSlices(esNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]map[string][]discovery.EndpointSlice{} // manager -> Service -> slices
	var upstream []discovery.EndpointSlice
	for _, s := range all.Items {
		m := s.Labels[discovery.LabelManagedBy]
		if by[m] == nil {
			by[m] = map[string][]discovery.EndpointSlice{}
		}
		by[m][s.Labels[discovery.LabelServiceName]] = append(by[m][s.Labels[discovery.LabelServiceName]], s)
		if m == endpointslice.ControllerName || m == endpointslice.MirroringControllerName {
			upstream = append(upstream, s)
		}
	}
	for _, m := range []string{wrController, wrNaiveName} {
		for _, svc := range e.svcs {
			for a, n := range wrCountAddresses(by[m][svc.Name]) {
				if n > 1 {
					fail("%s: %s's slices of %s hold %s %d times", step, m, svc.Name, a, n)
				}
			}
			if diff := gocmp.Diff(e.want[svc.Name], wrEndpointsOf(by[m][svc.Name])); diff != "" {
				fail("%s: %s's slices of %s (-want +got):\n%s", step, m, svc.Name, diff)
			}
		}
	}
	for _, f := range e.writer.foreignWrites() {
		fail("%s: the Writer wrote a slice not its own: %s", step, f)
	}
	present := map[string]bool{}
	for _, s := range upstream {
		present[s.Name] = true
		e.seen[s.Name] = true
		if !e.upstream.wrote(s.Name, s.ResourceVersion) {
			// The list may have seen a write whose response is not back yet.
			e.rechecks++
			time.Sleep(2 * time.Second)
			if !e.upstream.wrote(s.Name, s.ResourceVersion) {
				fail("%s: upstream's slice %s (%s) is at resourceVersion %s, which no write of upstream's produced",
					step, s.Name, s.Labels[discovery.LabelManagedBy], s.ResourceVersion)
			}
		}
	}
	for name := range e.seen {
		if !present[name] && !e.upstream.wasDeleted(name) {
			fail("%s: upstream's slice %s is gone, and upstream did not delete it", step, name)
		}
	}
	if bad {
		t.FailNow()
	}
}

func wrCountAddresses(list []discovery.EndpointSlice) map[string]int {
	out := map[string]int{}
	for _, s := range list {
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				out[a]++
			}
		}
	}
	return out
}

// checkUpstreamContent waits (up to 30 s) until upstream's slices of
// w-00, w-01 hold the pods and those of w-02, w-03 the Endpoints
// addresses: both upstream controllers kept working beside the Writer.
func (e *wrEnv) checkUpstreamContent(ctx context.Context) {
	t := e.t
	pods := map[string]bool{}
	for i, on := range e.podsOn {
		pods[esPodIP("web", i)] = on
	}
	want := map[string]map[string]bool{"w-00": pods, "w-01": pods, "w-02": e.mirror["w-02"], "w-03": e.mirror["w-03"]}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]map[string]bool{}
		for name := range want {
			m := endpointslice.ControllerName
			if name >= "w-02" {
				m = endpointslice.MirroringControllerName
			}
			list, err := e.srv.Client.DiscoveryV1().EndpointSlices(esNamespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{
				discovery.LabelServiceName: name, discovery.LabelManagedBy: m}.String()})
			if err != nil {
				t.Fatal(err)
			}
			got[name] = wrEndpointsOf(list.Items)
		}
		diff := gocmp.Diff(want, got)
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream's slices did not converge within 30 s (-want +got):\n%s", diff)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// wrChange returns a copy of cur with, in each of the Services picked,
// add addresses added, remove removed and flip readiness flips.
func wrChange(r *rand.Rand, cur map[string]map[string]bool, pick func(i int) bool, add, remove, flip int) map[string]map[string]bool {
	next := map[string]map[string]bool{}
	for name, m := range cur {
		next[name] = m
	}
	for i := range wrServices {
		if !pick(i) {
			continue
		}
		name := fmt.Sprintf("w-%02d", i)
		m := map[string]bool{}
		for a, v := range cur[name] {
			m[a] = v
		}
		addrs := slices.Sorted(maps.Keys(m))
		r.Shuffle(len(addrs), func(a, b int) { addrs[a], addrs[b] = addrs[b], addrs[a] })
		remove := min(remove, len(addrs)-10) // never empty a Service
		for _, a := range addrs[:remove] {
			delete(m, a)
		}
		for _, a := range addrs[remove:min(remove+flip, len(addrs))] {
			m[a] = !m[a]
		}
		for k := 0; add > 0; k++ {
			a := wrAddr(i, k)
			if _, ok := cur[name][a]; !ok {
				m[a] = true
				add--
			}
		}
		next[name] = m
	}
	return next
}

// TestWriterBesideUpstream runs fairslice's Writer (managed-by
// fairslice-writer.example.com) on one kube-apiserver beside upstream's
// EndpointSlice controller (Services w-00 and w-01 also select pods) and
// mirroring controller (w-02 and w-03 also have Endpoints objects), and
// a naive writer in the test that replaces all of a Service's slices on
// every change (managed-by naive-writer.example.com, same Services,
// deleting before creating, so its Services briefly have no slices).
// Over churn of 5,000 endpoints in 25 selectorless Services (addresses
// added, removed, readiness flipped, while pods and Endpoints change
// too), first with a plain informer and then with a new Writer whose
// informer (of its own slices only) sees every EndpointSlice watch read
// 50 ms late, each step run twice and finally each Service synced twice
// back to back, it checks at every step that no side fought another
// (wrEnv.check) and that the Writer's slices hold exactly the desired
// endpoints, each once; with the lag, some Syncs must have found the
// informer stale, and none may fail on a write conflict. It counts the
// Writer's writes against the naive writer's (no more in all) and a
// lower bound (no fewer at any step), and times each change from the
// Sync call to the test's watch showing it (logged, p50/p99).
//
// Then it restarts: with 500 more Services of 150 endpoints (over 1,500
// of the Writer's slices in all), a new Writer with a new informer
// syncs every Service; it must write nothing, within 30 s.
func TestWriterBesideUpstream(t *testing.T) {
	e := startWREnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e.setup(ctx)
	r := rand.New(rand.NewPCG(27, 4))

	w := startWRWriter(t, wrClient(e.srv, &e.writes, e.writer, 0), wrClient(e.srv, nil, nil, 0), false)
	all := func(int) bool { return true }
	first := map[string]map[string]bool{}
	for i := range wrServices {
		name := fmt.Sprintf("w-%02d", i)
		first[name] = map[string]bool{}
		for k := range wrPerService {
			first[name][wrAddr(i, k)] = true
		}
	}
	type step struct {
		name string
		next func() map[string]map[string]bool
	}
	steps := []step{
		{"create 25 x 200", func() map[string]map[string]bool { return first }},
		{"add 20 in 10 services", func() map[string]map[string]bool {
			return wrChange(r, e.want, func(i int) bool { return i%5 < 2 }, 20, 0, 0)
		}},
		{"remove 20 in 10 services", func() map[string]map[string]bool {
			return wrChange(r, e.want, func(i int) bool { return i%5 < 2 }, 0, 20, 0)
		}},
		{"flip 10 in all", func() map[string]map[string]bool { return wrChange(r, e.want, all, 0, 0, 10) }},
		{"flip 1 in all", func() map[string]map[string]bool { return wrChange(r, e.want, all, 0, 0, 1) }},
		{"add 5 remove 5 flip 5 in all", func() map[string]map[string]bool { return wrChange(r, e.want, all, 5, 5, 5) }},
		{"remove 150 in 3 services", func() map[string]map[string]bool {
			return wrChange(r, e.want, func(i int) bool { return i%8 == 7 }, 0, 150, 0)
		}},
		{"add 150 in 3 services", func() map[string]map[string]bool {
			return wrChange(r, e.want, func(i int) bool { return i%8 == 7 }, 150, 0, 0)
		}},
	}
	run := func(w *wrWriter, prefix string, steps []step, rounds int) {
		for _, s := range steps {
			c := wrStepCounts{step: prefix + s.name}
			start := time.Now()
			for range rounds {
				e.churnUpstream(ctx, r)
				e.round(ctx, w, s.next(), &c)
				e.check(ctx, c.step)
			}
			t.Logf("%-40s writes: Writer %4d, naive %4d, minimum %4d (%.1fs)", c.step, c.writer, c.naive, c.minimum, time.Since(start).Seconds())
			if c.writer < c.minimum {
				t.Errorf("%s: the Writer wrote %d times, fewer than the minimum %d: the bound is wrong", c.step, c.writer, c.minimum)
			}
			e.counts = append(e.counts, c)
		}
	}
	run(w, "", steps, 1)
	w.stop()
	e.reportLatency("plain informer")

	// The same churn with a new Writer whose informer lags; two rounds
	// per step, the second right after the first, so that Syncs find the
	// informer behind the Writer's writes.
	lagged := startWRWriter(t, wrClient(e.srv, &e.writes, e.writer, 0), wrClient(e.srv, nil, nil, wrLag), true)
	run(lagged, "lagging: ", steps[1:], 2)
	// Each Service synced twice in a row: the second Sync always comes
	// before the informer shows the first's writes. Its minimum is not
	// computed (no totals).
	c := wrStepCounts{step: "lagging: flip 5 then 5 back to back"}
	once := wrChange(r, e.want, all, 0, 0, 5)
	e.rounds(ctx, lagged, []map[string]map[string]bool{once, wrChange(r, once, all, 0, 0, 5)}, &c)
	e.check(ctx, c.step)
	t.Logf("%-40s writes: Writer %4d, naive %4d", c.step, c.writer, c.naive)
	t.Logf("lagging informer: %d Syncs found it stale and were retried, %d failed on a conflict; upstream slices re-read %d times",
		lagged.stale.Load(), lagged.conflicts.Load(), e.rechecks)
	if lagged.stale.Load() == 0 {
		t.Errorf("no Sync found the lagging informer stale: the lagging phase proves nothing")
	}
	if n := w.conflicts.Load() + lagged.conflicts.Load(); n > 0 {
		t.Errorf("%d Syncs failed on a write conflict: the Writer planned from a view older than its own writes", n)
	}
	lagged.stop()
	e.reportLatency("lagging informer")
	e.checkUpstreamContent(ctx)
	e.reportWrites()

	e.restart(ctx, t)
}

// reportWrites logs the write counts of all steps, and fails the test if
// the Writer wrote more than the naive writer in all. (One step may cost
// the Writer more: after shrinking Services the naive writer's slices
// are fewer and fuller, as upstream's are not.)
func (e *wrEnv) reportWrites() {
	t := e.t
	var sum wrStepCounts
	for _, c := range e.counts {
		sum.writer += c.writer
		sum.naive += c.naive
		sum.minimum += c.minimum
	}
	t.Logf("| writes over all steps | Writer | naive | minimum |")
	t.Logf("|---|---|---|---|")
	t.Logf("| total | %d | %d | %d |", sum.writer, sum.naive, sum.minimum)
	t.Logf("Writer / minimum = %.2f, naive / Writer = %.2f", float64(sum.writer)/float64(sum.minimum), float64(sum.naive)/float64(sum.writer))
	if sum.writer > sum.naive {
		t.Errorf("the Writer wrote %d times in all, the naive writer %d: want no more", sum.writer, sum.naive)
	}
}

// reportLatency logs the Sync-to-visible latencies since the last
// report, and fails the test if a change never showed.
func (e *wrEnv) reportLatency(phase string) {
	t := e.t
	e.latency.mu.Lock()
	lat := e.latency.samples
	pending := len(e.latency.pending)
	e.latency.samples = nil
	e.latency.mu.Unlock()
	if pending > 0 {
		t.Errorf("%s: %d changes never showed in the test's watch", phase, pending)
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		t.Logf("%s: Sync-to-visible latency over %d changes: p50 %v, p99 %v, max %v", phase, len(lat),
			lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	}
}

// restart adds Services until the Writer has over 1,500 slices, then
// runs a full resync of every Service with a new Writer and informer:
// it must write nothing, within 30 s.
func (e *wrEnv) restart(ctx context.Context, t *testing.T) {
	fill := startWRWriter(t, wrClient(e.srv, &e.writes, e.writer, 0), wrClient(e.srv, nil, nil, 0), false)
	svcs := slices.Clone(e.svcs)
	more := make([]*corev1.Service, wrRestart)
	var mu sync.Mutex // e.want
	start := time.Now()
	err := esParallel(0, wrRestart, func(i int) error {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r-%03d", i)},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: wrPorts}}
		svc, err := e.srv.Client.CoreV1().Services(esNamespace).Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		more[i] = svc
		want := map[string]bool{}
		for k := range 150 {
			want[wrAddr(wrServices+i, k)] = k%7 != 0
		}
		mu.Lock()
		e.want[svc.Name] = want
		mu.Unlock()
		return fill.sync(ctx, svc, want)
	})
	if err != nil {
		t.Fatal(err)
	}
	fill.stop()
	svcs = append(svcs, more...)
	list, err := e.srv.Client.DiscoveryV1().EndpointSlices(esNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: discovery.LabelManagedBy + "=" + wrController})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []string
	for _, es := range list.Items {
		if es.Labels[discovery.LabelServiceName] == "r-000" {
			sizes = append(sizes, fmt.Sprintf("%s:%s:%d", es.Name, es.AddressType, len(es.Endpoints)))
		}
	}
	t.Logf("restart: wrote %d Services more in %.1fs; the Writer has %d slices; r-000's: %v", wrRestart, time.Since(start).Seconds(), len(list.Items), sizes)
	if len(list.Items) < 1500 {
		t.Fatalf("the Writer has %d slices, want at least 1,500 for the restart", len(list.Items))
	}

	var writes esWrites
	start = time.Now()
	fresh := startWRWriter(t, wrClient(e.srv, &writes, e.writer, 0), wrClient(e.srv, nil, nil, 0), false)
	synced := time.Since(start)
	err = esParallel(0, len(svcs), func(i int) error {
		return fresh.sync(ctx, svcs[i], e.want[svcs[i].Name])
	})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restart: full resync of %d Services (%d slices) by a new Writer took %.2fs (informer synced after %.2fs); writes %v",
		len(svcs), len(list.Items), took.Seconds(), synced.Seconds(), &writes)
	if writes.total() != 0 {
		t.Errorf("restart: the new Writer wrote %v, want 0", &writes)
	}
	if took > 30*time.Second {
		t.Errorf("restart: the full resync took %v, want under 30s", took)
	}
}
