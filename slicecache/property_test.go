package slicecache

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fairslice/fairslice/slicer"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// reference is the naive model: the latest recorded version of every
// slice, with the sequence number it was recorded at, rebuilt from
// scratch at every checkout.
type reference struct {
	latest  map[ServiceName]map[string]refVersion
	applied map[ServiceName]map[string]refVersion
	pending map[ServiceName]bool
	seq     uint64
}

type refVersion struct {
	s       *Slice
	removed bool
	seq     uint64
}

type refCopy struct {
	seq, portIdx, epIdx int
	e                   Endpoint
}

// merged rebuilds every service port of one Service from its applied
// slices: all copies of an endpoint, ordered as they were given; the last
// non-terminating one wins, or else the first one of the most recent
// slice.
func (r *reference) merged(svc ServiceName, nodeName string) map[PortName][]Endpoint {
	copies := map[PortName]map[refKey][]refCopy{}
	for _, v := range r.applied[svc] {
		for pi, p := range v.s.Ports {
			if p.Port == 0 {
				continue
			}
			pn := PortName{p.Name, p.Protocol}
			if copies[pn] == nil {
				copies[pn] = map[refKey][]refCopy{}
			}
			for ei, e := range v.s.Endpoints {
				if len(e.Addresses) == 0 {
					continue
				}
				addr, ok := normalize(v.s.AddressType, e.Addresses[0])
				if !ok {
					continue
				}
				k := refKey{addr, p.Port}
				m := Endpoint{Address: addr, Port: p.Port,
					Ready: e.Conditions.Ready != slicer.False, Serving: e.Conditions.Serving != slicer.False,
					Terminating: e.Conditions.Terminating == slicer.True, Local: nodeName != "" && e.NodeName == nodeName,
					NodeName: e.NodeName, Zone: e.Zone, Hostname: e.Hostname, TargetRef: targetRef(&e.TargetRef), Hints: e.Hints}
				copies[pn][k] = append(copies[pn][k], refCopy{int(v.seq), pi, ei, m})
			}
		}
	}
	out := map[PortName][]Endpoint{}
	for pn, byKey := range copies {
		for _, cs := range byKey {
			slices.SortFunc(cs, func(a, b refCopy) int {
				return cmpInts(a.seq, b.seq, a.portIdx, b.portIdx, a.epIdx, b.epIdx)
			})
			var win *refCopy
			for i := range cs {
				if !cs[i].e.Terminating {
					win = &cs[i]
				}
			}
			if win == nil {
				last := cs[len(cs)-1].seq
				for i := range cs {
					if cs[i].seq == last {
						win = &cs[i]
						break
					}
				}
			}
			out[pn] = append(out[pn], win.e)
		}
		slices.SortFunc(out[pn], compareEndpoints)
	}
	return out
}

// refKey is the reference's endpoint identity.
type refKey struct {
	addr string
	port int32
}

func cmpInts(xs ...int) int {
	for i := 0; i < len(xs); i += 2 {
		if xs[i] != xs[i+1] {
			if xs[i] < xs[i+1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// TestCacheMatchesReference drives a Cache and the naive reference with
// random slice events and compares, at every checkout, the Services
// reported, every service port's endpoints, and the changes reported
// against the difference of the reference's states before and after.
func TestCacheMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		node := rapid.SampledFrom([]string{"", "n1"}).Draw(t, "node")
		c, err := New(Options{NodeName: node})
		if err != nil {
			t.Fatal(err)
		}
		ref := &reference{latest: map[ServiceName]map[string]refVersion{}, applied: map[ServiceName]map[string]refVersion{}, pending: map[ServiceName]bool{}}
		portSets := [][]slicer.Port{
			{{Name: "http", Port: 80, Protocol: "TCP"}},
			{{Name: "http", Port: 8080, Protocol: "TCP"}},
			{{Name: "web", Port: 80, Protocol: "TCP"}, {Name: "dns", Port: 53, Protocol: "UDP"}},
			{{Name: "http", Port: 80, Protocol: "TCP"}, {Name: "http", Port: 80, Protocol: "TCP"}},
			{{Name: "http", Protocol: "TCP"}},
		}
		addrs := []string{"10.0.0.1", "10.0.0.2", "010.0.0.2", "10.0.0.3", "", "bogus"}
		rv := 0
		var history []*Slice
		for step := range rapid.IntRange(1, 40).Draw(t, "steps") {
			svc := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "svc")
			name := svc + "-" + rapid.SampledFrom([]string{"x", "y", "z"}).Draw(t, "slice")
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1, 2: // a new version
				rv++
				s := mkSlice(name, svc, fmt.Sprint(rv), rapid.SampledFrom(portSets).Draw(t, "ports"))
				for range rapid.IntRange(0, 4).Draw(t, "eps") {
					e := slicer.Endpoint{NodeName: rapid.SampledFrom([]string{"", "n1", "n2"}).Draw(t, "epnode"),
						Conditions: slicer.Conditions{
							Ready:       slicer.Tristate(rapid.IntRange(0, 2).Draw(t, "ready")),
							Serving:     slicer.Tristate(rapid.IntRange(0, 2).Draw(t, "serving")),
							Terminating: slicer.Tristate(rapid.IntRange(0, 2).Draw(t, "terminating"))}}
					if a := rapid.SampledFrom(addrs).Draw(t, "addr"); a != "" {
						e.Addresses = []string{a}
					}
					if rapid.Bool().Draw(t, "hinted") {
						e.Hints = &slicer.Hints{ForZones: []string{rapid.SampledFrom([]string{"z1", "z2"}).Draw(t, "zone")}}
					}
					s.Endpoints = append(s.Endpoints, e)
				}
				history = append(history, s)
				ref.record(s, false, c.Update(s), t)
			case 3: // a replay of an older version, or of the same one
				if len(history) > 0 {
					s := rapid.SampledFrom(history).Draw(t, "replay")
					ref.record(s, false, c.Update(s), t)
				}
			case 4: // a deletion, of the latest version or of a stale one
				if len(history) > 0 {
					s := rapid.SampledFrom(history).Draw(t, "deleted")
					ref.record(s, true, c.Delete(s), t)
				}
			case 5:
				checkCheckout(t, step, c, ref, node)
			}
		}
		checkCheckout(t, -1, c, ref, node)
	})
}

// record applies an event to the reference and checks the cache's answer
// against kube-proxy's rule: a change when the version differs from the
// latest recorded, and a deletion of an unknown slice is none.
func (r *reference) record(s *Slice, removed, got bool, t *rapid.T) {
	svc := ServiceName{s.Namespace, s.Labels[slicer.LabelServiceName]}
	prev, ok := r.latest[svc][s.Name]
	want := false
	switch {
	case !ok:
		want = !removed
	default:
		want = prev.removed != removed || prev.s.ResourceVersion != s.ResourceVersion
	}
	if got != want {
		t.Fatalf("recording %s/%s rv %s removed=%v = %v, want %v", svc, s.Name, s.ResourceVersion, removed, got, want)
	}
	if !want {
		return
	}
	if r.latest[svc] == nil {
		r.latest[svc] = map[string]refVersion{}
	}
	r.seq++
	r.latest[svc][s.Name] = refVersion{s, removed, r.seq}
	r.pending[svc] = true
}

func checkCheckout(t *rapid.T, step int, c *Cache, r *reference, node string) {
	before := map[ServiceName]map[PortName][]Endpoint{}
	for svc := range r.pending {
		before[svc] = r.merged(svc, node)
		r.applied[svc] = map[string]refVersion{}
		for name, v := range r.latest[svc] {
			if !v.removed {
				r.applied[svc][name] = v
			} else {
				delete(r.latest[svc], name)
			}
		}
	}
	got := c.Checkout()
	var want []Change
	var names []ServiceName
	for svc := range r.pending {
		names = append(names, svc)
	}
	slices.SortFunc(names, func(a, b ServiceName) int { return compareStrings(a.String(), b.String()) })
	for _, svc := range names {
		after := r.merged(svc, node)
		want = append(want, diffPorts(svc, before[svc], after))
		for _, pn := range c.Ports(svc) {
			if _, ok := after[pn]; !ok {
				t.Fatalf("step %d: Ports(%s) has %v, which has no endpoints", step, svc, pn)
			}
		}
		for pn, eps := range after {
			if diff := cmp.Diff(eps, c.Endpoints(svc, pn)); diff != "" {
				t.Fatalf("step %d: Endpoints(%s, %v) (-want +got):\n%s", step, svc, pn, diff)
			}
		}
	}
	clear(r.pending)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("step %d: Checkout() (-want +got):\n%s", step, diff)
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// diffPorts is the change between two states of a Service, port by port.
func diffPorts(svc ServiceName, before, after map[PortName][]Endpoint) Change {
	ch := Change{Service: svc}
	names := map[PortName]bool{}
	for pn := range before {
		names[pn] = true
	}
	for pn := range after {
		names[pn] = true
	}
	var sorted []PortName
	for pn := range names {
		sorted = append(sorted, pn)
	}
	slices.SortFunc(sorted, func(a, b PortName) int { return compareStrings(a.Name+"/"+a.Protocol, b.Name+"/"+b.Protocol) })
	for _, pn := range sorted {
		old := map[refKey]Endpoint{}
		for _, e := range before[pn] {
			old[refKey{e.Address, e.Port}] = e
		}
		var pc PortChange
		for _, e := range after[pn] {
			k := refKey{e.Address, e.Port}
			if o, ok := old[k]; !ok {
				pc.Added = append(pc.Added, e)
			} else if !o.Equal(&e) {
				pc.Updated = append(pc.Updated, e)
			}
			delete(old, k)
		}
		for _, e := range before[pn] {
			if _, ok := old[refKey{e.Address, e.Port}]; ok {
				pc.Removed = append(pc.Removed, e)
			}
		}
		if len(pc.Added)+len(pc.Updated)+len(pc.Removed) > 0 {
			pc.Port = pn
			ch.Ports = append(ch.Ports, pc)
		}
	}
	return ch
}
