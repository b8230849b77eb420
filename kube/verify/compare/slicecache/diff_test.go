// Package slicecachecompare checks slicecache against kube-proxy's
// EndpointsChangeTracker and EndpointSliceCache (k8s.io/kubernetes
// v1.37.2, pkg/proxy) on random sequences of EndpointSlice events, and
// benchmarks the two side by side.
package slicecachecompare

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kslicecache "github.com/fairslice/fairslice/kube/slicecache"
	"github.com/fairslice/fairslice/slicecache"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kproxy "k8s.io/kubernetes/pkg/proxy"
	"k8s.io/utils/ptr"
)

var (
	diffSeed      = flag.Uint64("diff.seed", 0, "seed of TestDifferentialTracker (0: from the clock)")
	diffSequences = flag.Int("diff.sequences", 200, "random event sequences in TestDifferentialTracker")
	diffEvents    = flag.Int("diff.events", 80, "events per sequence in TestDifferentialTracker")
)

const nodeName = "node-1"

var silenceKlog sync.Once

// family is one IP family's pair of implementations, fed the same events.
type family struct {
	addressType discovery.AddressType
	upstream    *kproxy.EndpointsChangeTracker
	em          kproxy.EndpointsMap
	ours        *kslicecache.Consumer
	// oursBefore is our view at the last checkout, canonical, per
	// service port and endpoint key; prevAmbiguous the endpoints whose
	// version then depended on map order in kube-proxy.
	oursBefore    map[string]map[string]string
	prevAmbiguous map[string]bool
	// compared and ambiguous count the endpoints compared after
	// checkouts, and those among them kube-proxy chose by map order.
	compared, ambiguous int
}

// gen makes the random events of one sequence and remembers the slices
// it wrote, the slices applied at the last checkout (to know where
// kube-proxy's answer depends on map order) and every version written
// (for stale replays).
type gen struct {
	r       *rand.Rand
	rv      int
	current map[string]*discovery.EndpointSlice // by namespace/name
	pending map[string]*discovery.EndpointSlice // latest recorded since the last checkout (nil: deleted)
	applied map[string]*discovery.EndpointSlice
	history []*discovery.EndpointSlice
}

var services = []types.NamespacedName{{Namespace: "default", Name: "web"}, {Namespace: "default", Name: "db"}, {Namespace: "other", Name: "web"}}

// portSets include renames (http to web), renumbering (80 to 8080), a
// second protocol, a duplicated name, and ports kube-proxy ignores (no
// number, no name).
var portSets = [][]discovery.EndpointPort{
	{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
	{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	{{Name: ptr.To("web"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
	{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)},
		{Name: ptr.To("dns"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolUDP)}},
	{{Name: ptr.To(""), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolUDP)},
		{Name: ptr.To(""), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolTCP)}},
	{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)},
		{Name: ptr.To("http"), Port: ptr.To[int32](81), Protocol: ptr.To(corev1.ProtocolTCP)}},
	{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP)}, {Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
}

func (g *gen) pick(n int) int { return g.r.IntN(n) }

func (g *gen) boolPtr() *bool {
	switch g.pick(3) {
	case 0:
		return nil
	case 1:
		return ptr.To(false)
	}
	return ptr.To(true)
}

// address is pod i's address in its family, sometimes written in a form
// kube-proxy normalises.
func (g *gen) address(at discovery.AddressType, svc, i int) string {
	if at == discovery.AddressTypeIPv6 {
		if g.pick(8) == 0 {
			return fmt.Sprintf("FD00:0:0:0:0:0:%X:%X", svc+1, i)
		}
		return fmt.Sprintf("fd00::%x:%x", svc+1, i)
	}
	if g.pick(8) == 0 {
		return fmt.Sprintf("010.%03d.0.%03d", svc+1, i)
	}
	return fmt.Sprintf("10.%d.0.%d", svc+1, i)
}

func (g *gen) endpoint(at discovery.AddressType, svc, i int) discovery.Endpoint {
	e := discovery.Endpoint{
		Conditions: discovery.EndpointConditions{Ready: g.boolPtr(), Serving: g.boolPtr(), Terminating: g.boolPtr()},
		Zone:       ptr.To([]string{"zone-a", "zone-b"}[i%2]),
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: services[svc].Namespace, Name: fmt.Sprintf("pod-%d", i)},
	}
	if at == discovery.AddressTypeFQDN {
		e.Addresses = []string{fmt.Sprintf("pod-%d.example.com", i)}
	} else if g.pick(20) > 0 {
		e.Addresses = []string{g.address(at, svc, i)}
	}
	if n := g.pick(4); n > 0 {
		e.NodeName = ptr.To(fmt.Sprintf("node-%d", n))
	}
	switch g.pick(4) {
	case 1:
		e.Hints = &discovery.EndpointHints{ForZones: []discovery.ForZone{{Name: "zone-a"}}}
	case 2:
		e.Hints = &discovery.EndpointHints{ForZones: []discovery.ForZone{{Name: "zone-b"}, {Name: "zone-a"}},
			ForNodes: []discovery.ForNode{{Name: nodeName}}}
	}
	return e
}

// write makes a new version of slice k of a Service.
func (g *gen) write(svc int, at discovery.AddressType, k int, eps []discovery.Endpoint, ports []discovery.EndpointPort) *discovery.EndpointSlice {
	g.rv++
	s := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%s-%d", services[svc].Name, strings.ToLower(string(at)), k), Namespace: services[svc].Namespace,
			ResourceVersion: strconv.Itoa(g.rv),
			Labels:          map[string]string{discovery.LabelServiceName: services[svc].Name},
		},
		AddressType: at, Endpoints: eps, Ports: ports,
	}
	if g.pick(40) == 0 {
		delete(s.Labels, discovery.LabelServiceName) // ignored by both
	}
	g.history = append(g.history, s)
	return s
}

func key(s *discovery.EndpointSlice) string { return s.Namespace + "/" + s.Name }

// event is one informer event.
type event struct {
	slice  *discovery.EndpointSlice
	remove bool
	what   string
}

// next returns the next event: a new or rewritten slice, an endpoint
// copied into another slice (a move in progress: the same endpoint in
// two slices, maybe with other conditions), a readiness or termination
// change, a deletion (of the current or a stale version), a replay of a
// stale version, or a resync of the current one.
func (g *gen) next() event {
	svc := g.pick(len(services))
	at := []discovery.AddressType{discovery.AddressTypeIPv4, discovery.AddressTypeIPv6}[g.pick(2)]
	if g.pick(30) == 0 {
		at = discovery.AddressTypeFQDN
	}
	k := g.pick(3)
	name := fmt.Sprintf("%s/%s-%s-%d", services[svc].Namespace, services[svc].Name, strings.ToLower(string(at)), k)
	cur := g.current[name]
	switch op := g.pick(10); {
	case op < 3 || cur == nil:
		var eps []discovery.Endpoint
		for _, i := range g.r.Perm(8)[:g.pick(5)] {
			eps = append(eps, g.endpoint(at, svc, i))
		}
		ports := portSets[0]
		if cur != nil && g.pick(2) == 0 {
			ports = cur.Ports
		} else if g.pick(3) == 0 {
			ports = portSets[g.pick(len(portSets))]
		}
		return event{slice: g.write(svc, at, k, eps, ports), what: "write"}
	case op < 5: // move: another slice's endpoint appears here too
		other := g.current[fmt.Sprintf("%s/%s-%s-%d", services[svc].Namespace, services[svc].Name, strings.ToLower(string(at)), (k+1+g.pick(2))%3)]
		if other == nil || len(other.Endpoints) == 0 {
			return event{slice: cur, what: "resync"}
		}
		e := *other.Endpoints[g.pick(len(other.Endpoints))].DeepCopy()
		if g.pick(2) == 0 {
			e.Conditions = discovery.EndpointConditions{Ready: g.boolPtr(), Serving: g.boolPtr(), Terminating: g.boolPtr()}
		}
		eps := append(slices.Clone(cur.Endpoints), e)
		return event{slice: g.write(svc, at, k, eps, cur.Ports), what: "move in"}
	case op < 7: // conditions of one endpoint change
		eps := make([]discovery.Endpoint, len(cur.Endpoints))
		for i := range eps {
			eps[i] = *cur.Endpoints[i].DeepCopy()
		}
		if len(eps) > 0 {
			eps[g.pick(len(eps))].Conditions = discovery.EndpointConditions{Ready: g.boolPtr(), Serving: g.boolPtr(), Terminating: g.boolPtr()}
		}
		return event{slice: g.write(svc, at, k, eps, cur.Ports), what: "conditions"}
	case op == 7:
		if g.pick(4) == 0 {
			return event{slice: g.history[g.pick(len(g.history))], remove: true, what: "stale delete"}
		}
		return event{slice: cur, remove: true, what: "delete"}
	case op == 8:
		return event{slice: g.history[g.pick(len(g.history))], what: "stale replay"}
	}
	return event{slice: cur, what: "resync"}
}

// TestDifferentialTracker feeds random EndpointSlice events to kube-proxy's
// EndpointsChangeTracker and to slicecache (through the kube adapter), one
// pair per IP family, and checks that they agree on whether each event is
// a change, on the set of Services each checkout reports, on the
// endpoints of every service port after each checkout, and on what each
// checkout changed. Where kube-proxy's choice between two copies of an
// endpoint depends on Go map order, either copy is accepted.
func TestDifferentialTracker(t *testing.T) {
	silenceKlog.Do(func() { klog.SetLogger(logr.Discard()) })
	s := *diffSeed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -diff.seed=%d)", s, s)
	r := rand.New(rand.NewPCG(s, 0))
	checkouts, changes, compared, ambiguous := 0, 0, 0, 0
	for seq := range *diffSequences {
		g := &gen{r: r, current: map[string]*discovery.EndpointSlice{}, pending: map[string]*discovery.EndpointSlice{}, applied: map[string]*discovery.EndpointSlice{}}
		var fams []*family
		for _, fam := range []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol} {
			at := discovery.AddressTypeIPv4
			if fam == corev1.IPv6Protocol {
				at = discovery.AddressTypeIPv6
			}
			c, err := kslicecache.NewConsumer(kslicecache.Options{AddressType: at, NodeName: nodeName})
			if err != nil {
				t.Fatal(err)
			}
			fams = append(fams, &family{addressType: at, upstream: kproxy.NewEndpointsChangeTracker(fam, nodeName, nil, nil),
				em: kproxy.EndpointsMap{}, ours: c, oursBefore: map[string]map[string]string{}, prevAmbiguous: map[string]bool{}})
		}
		for step := range *diffEvents {
			ev := g.next()
			if ev.slice == nil {
				continue
			}
			for _, f := range fams {
				want := f.upstream.EndpointSliceUpdate(ev.slice, ev.remove)
				var got bool
				if ev.remove {
					got = f.ours.Delete(ev.slice)
				} else {
					got = f.ours.Update(ev.slice)
				}
				if got != want {
					t.Fatalf("seed %d sequence %d step %d: %s of %s rv %s (%s): fairslice reports change %v, kube-proxy %v",
						s, seq, step, ev.what, key(ev.slice), ev.slice.ResourceVersion, f.addressType, got, want)
				}
				if want {
					changes++
				}
			}
			if ev.slice.Labels[discovery.LabelServiceName] != "" {
				if ev.remove {
					if _, known := g.pending[key(ev.slice)]; known || g.applied[key(ev.slice)] != nil {
						g.pending[key(ev.slice)] = nil
					}
					delete(g.current, key(ev.slice))
				} else {
					g.pending[key(ev.slice)] = ev.slice
					g.current[key(ev.slice)] = ev.slice
				}
			}
			if g.pick(4) == 0 || step == *diffEvents-1 {
				checkouts++
				for k, s := range g.pending {
					if s == nil {
						delete(g.applied, k)
					} else {
						g.applied[k] = s
					}
				}
				clear(g.pending)
				for _, f := range fams {
					checkoutAndCompare(t, fmt.Sprintf("seed %d sequence %d step %d (%s)", s, seq, step, f.addressType), f, g.applied)
				}
			}
		}
		for _, f := range fams {
			compared += f.compared
			ambiguous += f.ambiguous
		}
	}
	t.Logf("%d sequences, %d changes recorded, %d checkouts compared, %d endpoints compared of which %d had copies kube-proxy chooses between by map order",
		*diffSequences, changes, checkouts, compared, ambiguous)
}

// canonUpstream is what kube-proxy's endpoint shows: address and port,
// locality, conditions and hint sets.
func canonUpstream(e kproxy.Endpoint) string {
	return canon(e.String(), e.IsLocal(), e.IsReady(), e.IsServing(), e.IsTerminating(), sets(e.ZoneHints()), sets(e.NodeHints()))
}

func canonOurs(e *slicecache.Endpoint) string {
	var zones, nodes []string
	if e.Hints != nil {
		zones, nodes = e.Hints.ForZones, e.Hints.ForNodes
	}
	return canon(net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port))), e.Local, e.Ready, e.Serving, e.Terminating, zones, nodes)
}

func sets[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func canon(hostPort string, local, ready, serving, terminating bool, zones, nodes []string) string {
	zones, nodes = slices.Clone(zones), slices.Clone(nodes)
	slices.Sort(zones)
	slices.Sort(nodes)
	return fmt.Sprintf("%s local=%v ready=%v serving=%v terminating=%v zones=%v nodes=%v", hostPort, local, ready, serving, terminating,
		slices.Compact(zones), slices.Compact(nodes))
}

func portKey(svc types.NamespacedName, name string, proto corev1.Protocol) string {
	return fmt.Sprintf("%s %s/%s", svc, name, proto)
}

// candidates returns, per service port and endpoint, the versions
// kube-proxy may choose over the slices applied: the endpoint's
// candidates are each slice's own winner (its last non-terminating copy,
// or its first copy when all are terminating), restricted to the
// non-terminating ones when there are any. Which one wins depends on Go
// map order when there are several.
func candidates(applied map[string]*discovery.EndpointSlice, at discovery.AddressType) map[string]map[string][]string {
	type perSlice struct{ lastLive, firstTerm string }
	bySlice := map[string]map[string]map[string]*perSlice{} // port -> endpoint -> slice -> winner
	for name, s := range applied {
		if s.AddressType != at {
			continue
		}
		svc := types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discovery.LabelServiceName]}
		for _, p := range s.Ports {
			if p.Name == nil || p.Port == nil || *p.Port == 0 {
				continue
			}
			pk := portKey(svc, *p.Name, *p.Protocol)
			for _, e := range s.Endpoints {
				if len(e.Addresses) == 0 {
					continue
				}
				ce := ourCanon(s, &e, *p.Port)
				ek := strings.Fields(ce)[0]
				if bySlice[pk] == nil {
					bySlice[pk] = map[string]map[string]*perSlice{}
				}
				if bySlice[pk][ek] == nil {
					bySlice[pk][ek] = map[string]*perSlice{}
				}
				w := bySlice[pk][ek][name]
				if w == nil {
					w = &perSlice{}
					bySlice[pk][ek][name] = w
				}
				if e.Conditions.Terminating == nil || !*e.Conditions.Terminating {
					w.lastLive = ce
				} else if w.firstTerm == "" {
					w.firstTerm = ce
				}
			}
		}
	}
	out := map[string]map[string][]string{}
	for pk, byEp := range bySlice {
		out[pk] = map[string][]string{}
		for ek, byName := range byEp {
			var live, term []string
			for _, w := range byName {
				if w.lastLive != "" {
					live = append(live, w.lastLive)
				} else {
					term = append(term, w.firstTerm)
				}
			}
			if len(live) == 0 {
				live = term
			}
			slices.Sort(live)
			out[pk][ek] = slices.Compact(live)
		}
	}
	return out
}

// ourCanon is the canonical form of one copy of an endpoint, through the
// adapter's conversion (so that address normalisation is ours; the
// comparison with kube-proxy's endpoints checks it).
func ourCanon(s *discovery.EndpointSlice, e *discovery.Endpoint, port int32) string {
	one := s.DeepCopy()
	one.Name, one.ResourceVersion = "x", "x"
	one.Endpoints = []discovery.Endpoint{*e}
	one.Ports = []discovery.EndpointPort{{Name: ptr.To("p"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}}
	c, _ := slicecache.New(slicecache.Options{AddressType: "IPv4", NodeName: nodeName})
	if s.AddressType == discovery.AddressTypeIPv6 {
		c, _ = slicecache.New(slicecache.Options{AddressType: "IPv6", NodeName: nodeName})
	}
	one.Labels = map[string]string{discovery.LabelServiceName: "x"}
	c.Update(kslicecache.FromAPI(one))
	c.Checkout()
	eps := c.Endpoints(slicecache.ServiceName{Namespace: one.Namespace, Name: "x"}, slicecache.PortName{Name: "p", Protocol: "TCP"})
	if len(eps) != 1 {
		return "unparsable " + e.Addresses[0]
	}
	return canonOurs(&eps[0])
}

// checkoutAndCompare checks out both implementations and compares the
// Services reported, every service port's endpoints, and the changes.
func checkoutAndCompare(t *testing.T, where string, f *family, applied map[string]*discovery.EndpointSlice) {
	t.Helper()
	before := upstreamView(f.em)
	res := f.em.Update(f.upstream)
	got := f.ours.Checkout()
	after := upstreamView(f.em)

	var wantSvcs, gotSvcs []string
	for nn := range res.UpdatedServices {
		wantSvcs = append(wantSvcs, nn.String())
	}
	sort.Strings(wantSvcs)
	for _, ch := range got {
		gotSvcs = append(gotSvcs, ch.Service.String())
	}
	if diff := cmp.Diff(wantSvcs, gotSvcs); diff != "" {
		t.Fatalf("%s: Services changed by the checkout (-kube-proxy +fairslice):\n%s", where, diff)
	}

	ours := map[string]map[string]string{}
	for _, nn := range services {
		svc := slicecache.ServiceName{Namespace: nn.Namespace, Name: nn.Name}
		for _, pn := range f.ours.Ports(svc) {
			pk := portKey(nn, pn.Name, corev1.Protocol(pn.Protocol))
			ours[pk] = map[string]string{}
			for _, e := range f.ours.Endpoints(svc, pn) {
				c := canonOurs(&e)
				ours[pk][strings.Fields(c)[0]] = c
			}
		}
	}
	cands := candidates(applied, f.addressType)
	ambiguous := func(pk, ek string) bool { return len(cands[pk][ek]) > 1 }
	// Endpoints: equal, except that an ambiguous endpoint may be any of
	// its candidates in each.
	mismatch := func(view map[string]map[string]string) map[string]map[string]string {
		out := map[string]map[string]string{}
		for pk, eps := range view {
			out[pk] = map[string]string{}
			for ek, c := range eps {
				if ambiguous(pk, ek) {
					if !slices.Contains(cands[pk][ek], c) {
						c = "not a candidate: " + c
					} else {
						c = "one of the candidates"
					}
				}
				out[pk][ek] = c
			}
		}
		return out
	}
	for pk, eps := range after {
		for ek := range eps {
			f.compared++
			if ambiguous(pk, ek) {
				f.ambiguous++
			}
		}
	}
	if diff := cmp.Diff(mismatch(after), mismatch(ours)); diff != "" {
		t.Fatalf("%s: endpoints per service port after the checkout (-kube-proxy +fairslice):\n%s", where, diff)
	}

	// Changes: what each side changed between its own views, on the
	// endpoints whose version is not a matter of map order before or
	// after.
	skip := func(pk, ek string) bool { return ambiguous(pk, ek) || f.prevAmbiguous[pk+" "+ek] }
	wantCh := changeList(before, after, skip)
	gotCh := map[string]bool{}
	for _, ch := range got {
		nn := types.NamespacedName{Namespace: ch.Service.Namespace, Name: ch.Service.Name}
		for _, pc := range ch.Ports {
			pk := portKey(nn, pc.Port.Name, corev1.Protocol(pc.Port.Protocol))
			add := func(what string, eps []slicecache.Endpoint) {
				for _, e := range eps {
					c := canonOurs(&e)
					ek := strings.Fields(c)[0]
					if !skip(pk, ek) && !(what == "updated" && f.oursBefore[pk][ek] == c) {
						gotCh[pk+" "+what+" "+c] = true
					}
				}
			}
			add("added", pc.Added)
			add("updated", pc.Updated)
			add("removed", pc.Removed)
		}
	}
	if diff := cmp.Diff(wantCh, gotCh); diff != "" {
		t.Fatalf("%s: changes reported by the checkout (-kube-proxy's before/after +fairslice):\n%s", where, diff)
	}
	f.oursBefore = ours
	f.prevAmbiguous = map[string]bool{}
	for pk, eps := range cands {
		for ek, c := range eps {
			if len(c) > 1 {
				f.prevAmbiguous[pk+" "+ek] = true
			}
		}
	}
}

// upstreamView is kube-proxy's EndpointsMap, canonical, per service port
// and endpoint.
func upstreamView(em kproxy.EndpointsMap) map[string]map[string]string {
	out := map[string]map[string]string{}
	for spn, eps := range em {
		pk := portKey(spn.NamespacedName, spn.Port, spn.Protocol)
		out[pk] = map[string]string{}
		for _, e := range eps {
			out[pk][e.String()] = canonUpstream(e)
		}
	}
	return out
}

// changeList lists the differences between two views as
// "port added|updated|removed endpoint", leaving out skipped endpoints.
func changeList(before, after map[string]map[string]string, skip func(pk, ek string) bool) map[string]bool {
	out := map[string]bool{}
	for pk, eps := range after {
		for ek, c := range eps {
			old, ok := before[pk][ek]
			switch {
			case skip(pk, ek):
			case !ok:
				out[pk+" added "+c] = true
			case old != c:
				out[pk+" updated "+c] = true
			}
		}
	}
	for pk, eps := range before {
		for ek, c := range eps {
			if _, ok := after[pk][ek]; !ok && !skip(pk, ek) {
				out[pk+" removed "+c] = true
			}
		}
	}
	return out
}
