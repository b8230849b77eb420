package topology

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/fairslice/fairslice/slicer"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// refSelection is a reference reading of kube-proxy's CategorizeEndpoints
// (k8s.io/kubernetes v1.37.2 pkg/proxy/topology.go), written with sets over
// addresses, step by step as upstream documents it. nil sets are the ones
// upstream leaves nil.
type refSelection struct {
	Mode                   string
	Cluster, Local, Reach  map[string]bool
	HasAny                 bool
	ClusterNil, LocalNil   bool
	ClusterTerm, LocalTerm bool
}

func refSelect(all []Endpoint, p TrafficPolicy, node, zone string) refSelection {
	var eps []Endpoint // the cache drops endpoints without addresses
	for _, e := range all {
		if len(e.Addresses) > 0 {
			eps = append(eps, e)
		}
	}
	r := refSelection{ClusterNil: true, LocalNil: true}
	if len(eps) == 0 {
		return r
	}
	ready := func(e Endpoint) bool { return e.Conditions.Ready != False }
	servTerm := func(e Endpoint) bool { return e.Conditions.Serving != False && e.Conditions.Terminating == True }
	local := func(e Endpoint) bool { return node != "" && e.NodeName == node }
	in := func(list []string, x string) bool { return slices.Contains(list, x) }
	nodeHints := func(e Endpoint) []string {
		if e.Hints == nil || p.IgnoreNodeHints {
			return nil
		}
		return e.Hints.ForNodes
	}
	zoneHints := func(e Endpoint) []string {
		if e.Hints == nil {
			return nil
		}
		return e.Hints.ForZones
	}
	set := func(keep func(Endpoint) bool) map[string]bool {
		m := map[string]bool{}
		for _, e := range eps {
			if keep(e) {
				m[e.Addresses[0]] = true
			}
		}
		return m
	}
	usesCluster := !p.InternalLocal || p.External
	usesLocal := p.InternalLocal || (p.ExternalLocal && p.External)
	if usesCluster {
		var readyEps []Endpoint
		for _, e := range eps {
			if ready(e) {
				readyEps = append(readyEps, e)
			}
		}
		every := func(f func(Endpoint) bool) bool {
			for _, e := range readyEps {
				if !f(e) {
					return false
				}
			}
			return len(readyEps) > 0
		}
		some := func(f func(Endpoint) bool) bool { return slices.ContainsFunc(readyEps, f) }
		switch {
		case every(func(e Endpoint) bool { return len(nodeHints(e)) > 0 }) && some(func(e Endpoint) bool { return in(nodeHints(e), node) }):
			r.Mode = PreferSameNode
		case every(func(e Endpoint) bool { return len(zoneHints(e)) > 0 }) && some(func(e Endpoint) bool { return in(zoneHints(e), zone) }):
			r.Mode = PreferSameZone
		}
		r.Cluster = set(func(e Endpoint) bool {
			switch r.Mode {
			case PreferSameNode:
				return ready(e) && in(nodeHints(e), node)
			case PreferSameZone:
				return ready(e) && in(zoneHints(e), zone)
			}
			return ready(e)
		})
		if len(r.Cluster) == 0 {
			r.Cluster = set(servTerm)
			r.ClusterTerm = len(r.Cluster) > 0
		}
		r.ClusterNil, r.HasAny = false, len(r.Cluster) > 0
	}
	if !usesLocal {
		r.Reach = r.Cluster
		return r
	}
	r.HasAny = r.HasAny || len(set(func(e Endpoint) bool { return ready(e) || servTerm(e) })) > 0
	r.LocalNil = false
	switch {
	case len(set(func(e Endpoint) bool { return local(e) && ready(e) })) > 0:
		r.Local = set(func(e Endpoint) bool { return local(e) && ready(e) })
	case len(set(func(e Endpoint) bool { return local(e) && !ready(e) && servTerm(e) })) > 0:
		r.Local = set(func(e Endpoint) bool { return local(e) && servTerm(e) })
		r.LocalTerm = true
	default:
		r.Local = map[string]bool{} // upstream: nil; here empty means "used, none"
	}
	if !usesCluster {
		r.Reach = r.Local
		return r
	}
	r.Reach = maps.Clone(r.Cluster)
	maps.Copy(r.Reach, r.Local)
	return r
}

// TestPropertySelectEndpoints checks SelectEndpoints against refSelect on
// random endpoints (conditions set, unset or false; zone and node hints,
// empty or missing; endpoints without addresses) and policies, and that
// its index lists are in endpoint order without repeats.
func TestPropertySelectEndpoints(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tri := func(label string) Condition {
			return rapid.SampledFrom([]Condition{Unset, True, False}).Draw(t, label)
		}
		names := func(label string, pool []string) []string {
			return rapid.SliceOfNDistinct(rapid.SampledFrom(pool), 0, 2, rapid.ID[string]).Draw(t, label)
		}
		n := rapid.IntRange(0, 8).Draw(t, "n")
		eps := make([]Endpoint, n)
		for i := range eps {
			e := &eps[i]
			if rapid.IntRange(0, 9).Draw(t, "noAddress") > 0 {
				e.Addresses = []string{fmt.Sprintf("10.0.0.%d", i)}
			}
			e.NodeName = rapid.SampledFrom([]string{"", "local", "other"}).Draw(t, "nodeName")
			e.Conditions = slicer.Conditions{Ready: tri("ready"), Serving: tri("serving"), Terminating: tri("terminating")}
			if rapid.Bool().Draw(t, "hinted") {
				e.Hints = &Hints{ForZones: names("zones", []string{"z1", "z2", ""}), ForNodes: names("nodes", []string{"local", "other"})}
			}
		}
		p := TrafficPolicy{InternalLocal: rapid.Bool().Draw(t, "iLocal"), ExternalLocal: rapid.Bool().Draw(t, "eLocal"),
			External: rapid.Bool().Draw(t, "external"), IgnoreNodeHints: rapid.IntRange(0, 4).Draw(t, "gateOff") == 0}
		node := rapid.SampledFrom([]string{"local", "local", ""}).Draw(t, "node")
		zone := rapid.SampledFrom([]string{"z1", "z2", ""}).Draw(t, "zone")

		sel := SelectEndpoints(eps, p, node, zone)
		asSet := func(idx []int) map[string]bool {
			if idx == nil {
				return nil
			}
			m := map[string]bool{}
			for _, i := range idx {
				m[eps[i].Addresses[0]] = true
			}
			if len(m) != len(idx) || !slices.IsSorted(idx) {
				t.Fatalf("index list %v repeats or is out of endpoint order", idx)
			}
			return m
		}
		got := refSelection{Mode: sel.Mode, Cluster: asSet(sel.Cluster), Local: asSet(sel.Local), HasAny: sel.HasAny,
			ClusterNil: sel.Cluster == nil, LocalNil: sel.Local == nil, ClusterTerm: sel.ClusterTerminating, LocalTerm: sel.LocalTerminating}
		reach := map[string]bool{}
		for _, i := range sel.Reachable {
			if reach[eps[i].Addresses[0]] {
				t.Fatalf("Reachable %v repeats an endpoint", sel.Reachable)
			}
			reach[eps[i].Addresses[0]] = true
		}
		got.Reach = reach
		want := refSelect(eps, p, node, zone)
		if want.Reach == nil {
			want.Reach = map[string]bool{}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("SelectEndpoints(node %q, zone %q, %+v) (-reference +got):\n%s\nwhy: %s", node, zone, p, diff, sel.Why)
		}
	})
}
