package topology

import (
	"github.com/fairslice/fairslice/slicer"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pe builds a proxy-side endpoint: flags holds R (ready), S (serving), T
// (terminating) for the conditions that are true (others false), L for an
// endpoint on the local node; zones and nodes are comma-separated hints.
func pe(addr, flags, zones, nodes string) Endpoint {
	e := Endpoint{Addresses: []string{addr}, NodeName: "remote",
		Conditions: slicer.Conditions{Ready: slicer.TristateOf(strings.Contains(flags, "R")), Serving: slicer.TristateOf(strings.Contains(flags, "S") || strings.Contains(flags, "R")),
			Terminating: slicer.TristateOf(strings.Contains(flags, "T"))}}
	if strings.Contains(flags, "L") {
		e.NodeName = "local"
	}
	if zones != "" || nodes != "" {
		e.Hints = &Hints{}
		if zones != "" {
			e.Hints.ForZones = strings.Split(zones, ",")
		}
		if nodes != "" {
			e.Hints.ForNodes = strings.Split(nodes, ",")
		}
	}
	return e
}

// TestSelectEndpointsUpstreamCases reproduces all 32 cases of
// TestCategorizeEndpoints of k8s.io/kubernetes v1.37.2 pkg/proxy, in its
// order and with its names and expectations. Upstream's endpoints are
// local by flag; here they are on node "local" (flag L) and the proxy runs
// on node "local" unless a case names another node. Upstream's
// preferSameEnabled=false is TrafficPolicy.IgnoreNodeHints. Upstream
// compares sets; the lists here are in SelectEndpoints' documented order
// (endpoint order; Reachable is Cluster, then the Local endpoints not in
// it), and nil (set not used) is told apart from empty. As upstream, an
// unset reach means "the one of cluster and local that is non-empty", and
// HasAny is expected when reach is non-empty or onlyRemote is set.
func TestSelectEndpointsUpstreamCases(t *testing.T) {
	eTPLocal := TrafficPolicy{ExternalLocal: true, External: true}
	iTPLocal := TrafficPolicy{InternalLocal: true, External: true}
	bothLocal := TrafficPolicy{InternalLocal: true, ExternalLocal: true, External: true}
	hinted := func(ready string) []Endpoint { // the four zone-hinted endpoints most cases use
		return []Endpoint{pe("10.1.2.3", "R", "zone-a", ""), pe("10.1.2.4", "R", "zone-b", ""), pe("10.1.2.5", "R", "zone-c", ""), pe("10.1.2.6", ready, "zone-a", "")}
	}
	nodeHinted := []Endpoint{pe("10.1.2.3", "R", "zone-a", "node-1"), pe("10.1.2.4", "R", "zone-b", "node-2"), pe("10.1.2.5", "R", "zone-c", "node-3"), pe("10.1.2.6", "R", "zone-a", "node-4")}
	localHinted := []Endpoint{pe("10.1.2.3", "RL", "zone-a", ""), pe("10.1.2.4", "RL", "zone-b", ""), pe("10.1.2.5", "R", "zone-c", ""), pe("10.1.2.6", "R", "zone-a", "")}
	list := func(a ...string) []string { return append([]string{}, a...) }
	tests := []struct {
		name                  string
		node, zone            string
		policy                TrafficPolicy
		eps                   []Endpoint
		cluster, local, reach []string
		onlyRemote            bool
	}{
		{name: "should use topology since all endpoints have hints, node has a zone label and and there are endpoints for the node's zone",
			zone: "zone-a", eps: hinted("R"), cluster: list("10.1.2.3", "10.1.2.6")},
		{name: "externalTrafficPolicy: Local, topology ignored for Local endpoints", zone: "zone-a", policy: eTPLocal, eps: localHinted,
			cluster: list("10.1.2.3", "10.1.2.6"), local: list("10.1.2.3", "10.1.2.4"), reach: list("10.1.2.3", "10.1.2.6", "10.1.2.4")},
		{name: "internalTrafficPolicy: Local, topology ignored for Local endpoints", zone: "zone-a", policy: iTPLocal, eps: localHinted,
			cluster: list("10.1.2.3", "10.1.2.6"), local: list("10.1.2.3", "10.1.2.4"), reach: list("10.1.2.3", "10.1.2.6", "10.1.2.4")},
		{name: "empty node labels", eps: []Endpoint{pe("10.1.2.3", "R", "zone-a", "")}, cluster: list("10.1.2.3")},
		{name: "empty zone label", zone: "", eps: []Endpoint{pe("10.1.2.3", "R", "zone-a", "")}, cluster: list("10.1.2.3")},
		{name: "node in different zone, no endpoint filtering", zone: "zone-b", eps: []Endpoint{pe("10.1.2.3", "R", "zone-a", "")}, cluster: list("10.1.2.3")},
		{name: "unready endpoint", zone: "zone-a", eps: hinted(""), cluster: list("10.1.2.3")},
		{name: "only unready endpoints in same zone (should not filter)", zone: "zone-a", eps: []Endpoint{
			pe("10.1.2.3", "", "zone-a", ""), pe("10.1.2.4", "R", "zone-b", ""), pe("10.1.2.5", "R", "zone-c", ""), pe("10.1.2.6", "", "zone-a", ""),
		}, cluster: list("10.1.2.4", "10.1.2.5")},
		{name: "missing hints, no filtering applied", zone: "zone-a", eps: []Endpoint{
			pe("10.1.2.3", "R", "zone-a", ""), pe("10.1.2.4", "R", "zone-b", ""), pe("10.1.2.5", "R", "", ""), pe("10.1.2.6", "R", "zone-a", ""),
		}, cluster: list("10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.6")},
		{name: "multiple hints per endpoint, filtering includes any endpoint with zone included", zone: "zone-c", eps: []Endpoint{
			pe("10.1.2.3", "R", "zone-a,zone-b,zone-c", ""), pe("10.1.2.4", "R", "zone-b,zone-c", ""), pe("10.1.2.5", "R", "zone-b,zone-d", ""), pe("10.1.2.6", "R", "zone-c", ""),
		}, cluster: list("10.1.2.3", "10.1.2.4", "10.1.2.6")},
		{name: "PreferSameNode falls back to same-zone when feature gate disabled", node: "node-1", zone: "zone-a",
			policy: TrafficPolicy{IgnoreNodeHints: true}, eps: nodeHinted, cluster: list("10.1.2.3", "10.1.2.6")},
		{name: "PreferSameNode available", node: "node-1", zone: "zone-a", eps: nodeHinted, cluster: list("10.1.2.3")},
		{name: "PreferSameNode ignored if some endpoints unhinted", node: "node-1", zone: "zone-a", eps: []Endpoint{
			pe("10.1.2.3", "R", "zone-a", "node-1"), pe("10.1.2.4", "R", "", ""), pe("10.1.2.5", "R", "zone-c", "node-3"), pe("10.1.2.6", "R", "zone-a", "node-4"),
		}, cluster: list("10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.6")},
		{name: "PreferSameNode falls back to PreferSameZone if no endpoint for node", node: "node-0", zone: "zone-a", eps: nodeHinted,
			cluster: list("10.1.2.3", "10.1.2.6")},
		{name: "conflicting topology and localness require merging allEndpoints", zone: "zone-a", policy: eTPLocal, eps: []Endpoint{
			pe("10.0.0.0", "RL", "zone-a", ""), pe("10.0.0.1", "RL", "zone-b", ""), pe("10.0.0.2", "R", "zone-a", ""), pe("10.0.0.3", "R", "zone-b", ""),
		}, cluster: list("10.0.0.0", "10.0.0.2"), local: list("10.0.0.0", "10.0.0.1"), reach: list("10.0.0.0", "10.0.0.2", "10.0.0.1")},
		// Upstream's table says an empty local set, but its check cannot
		// tell nil from empty, and CategorizeEndpoints returns nil for
		// every set when there are no endpoints; so do we.
		{name: "internalTrafficPolicy: Local, with empty endpoints", policy: TrafficPolicy{InternalLocal: true}, eps: []Endpoint{}},
		{name: "internalTrafficPolicy: Local, but all endpoints are remote", policy: TrafficPolicy{InternalLocal: true},
			eps: []Endpoint{pe("10.0.0.0", "R", "", ""), pe("10.0.0.1", "R", "", "")}, local: list(), onlyRemote: true},
		{name: "internalTrafficPolicy: Local, all endpoints are local", policy: TrafficPolicy{InternalLocal: true},
			eps: []Endpoint{pe("10.0.0.0", "RL", "", ""), pe("10.0.0.1", "RL", "", "")}, local: list("10.0.0.0", "10.0.0.1")},
		{name: "internalTrafficPolicy: Local, some endpoints are local", policy: TrafficPolicy{InternalLocal: true},
			eps: []Endpoint{pe("10.0.0.0", "RL", "", ""), pe("10.0.0.1", "R", "", "")}, local: list("10.0.0.0")},
		{name: "Cluster traffic policy, endpoints not Ready", eps: []Endpoint{pe("10.0.0.0", "", "", ""), pe("10.0.0.1", "", "", "")}, cluster: list()},
		{name: "Cluster traffic policy, some endpoints are Ready", eps: []Endpoint{pe("10.0.0.0", "", "", ""), pe("10.0.0.1", "R", "", "")}, cluster: list("10.0.0.1")},
		{name: "Cluster traffic policy, all endpoints are terminating", eps: []Endpoint{pe("10.0.0.0", "STL", "", ""), pe("10.0.0.1", "ST", "", "")},
			cluster: list("10.0.0.0", "10.0.0.1")},
		{name: "iTP: Local, eTP: Cluster, some endpoints local", policy: iTPLocal, eps: []Endpoint{pe("10.0.0.0", "RL", "", ""), pe("10.0.0.1", "R", "", "")},
			cluster: list("10.0.0.0", "10.0.0.1"), local: list("10.0.0.0"), reach: list("10.0.0.0", "10.0.0.1")},
		{name: "iTP: Cluster, eTP: Local, some endpoints local", policy: eTPLocal, eps: []Endpoint{pe("10.0.0.0", "RL", "", ""), pe("10.0.0.1", "R", "", "")},
			cluster: list("10.0.0.0", "10.0.0.1"), local: list("10.0.0.0"), reach: list("10.0.0.0", "10.0.0.1")},
		{name: "iTP: Local, eTP: Local, some endpoints local", policy: bothLocal, eps: []Endpoint{pe("10.0.0.0", "RL", "", ""), pe("10.0.0.1", "R", "", "")},
			cluster: list("10.0.0.0", "10.0.0.1"), local: list("10.0.0.0"), reach: list("10.0.0.0", "10.0.0.1")},
		{name: "iTP: Local, eTP: Local, all endpoints remote", policy: bothLocal, eps: []Endpoint{pe("10.0.0.0", "R", "", ""), pe("10.0.0.1", "R", "", "")},
			cluster: list("10.0.0.0", "10.0.0.1"), local: list(), reach: list("10.0.0.0", "10.0.0.1")},
		{name: "iTP: Local, eTP: Local, all endpoints remote and terminating", policy: bothLocal, eps: []Endpoint{pe("10.0.0.0", "ST", "", ""), pe("10.0.0.1", "ST", "", "")},
			cluster: list("10.0.0.0", "10.0.0.1"), local: list(), reach: list("10.0.0.0", "10.0.0.1"), onlyRemote: true},
		{name: "iTP: Cluster, eTP: Local, with terminating endpoints", policy: eTPLocal, eps: []Endpoint{
			pe("10.0.0.0", "R", "", ""), pe("10.0.0.1", "L", "", ""), pe("10.0.0.2", "STL", "", ""), pe("10.0.0.3", "ST", "", ""),
		}, cluster: list("10.0.0.0"), local: list("10.0.0.2"), reach: list("10.0.0.0", "10.0.0.2")},
		{name: "externalTrafficPolicy ignored if not externally accessible", policy: TrafficPolicy{ExternalLocal: true},
			eps: []Endpoint{pe("10.0.0.0", "R", "", ""), pe("10.0.0.1", "RL", "", "")}, cluster: list("10.0.0.0", "10.0.0.1"), reach: list("10.0.0.0", "10.0.0.1")},
		{name: "no cluster endpoints for iTP:Local internal-only service", policy: TrafficPolicy{InternalLocal: true},
			eps: []Endpoint{pe("10.0.0.0", "R", "", ""), pe("10.0.0.1", "RL", "", "")}, local: list("10.0.0.1"), reach: list("10.0.0.1")},
		{name: "empty endpoints when no service endpoints exist"},
		{name: "single endpoint not ready, not serving, not terminating", zone: "zone-a", eps: []Endpoint{pe("10.0.0.0", "", "", "")}, cluster: list()},
	}
	if len(tests) != 32 {
		t.Fatalf("%d cases, want upstream's 32", len(tests))
	}
	addrs := func(eps []Endpoint, idx []int) []string {
		if idx == nil {
			return nil
		}
		out := []string{}
		for _, i := range idx {
			out = append(out, address(&eps[i]))
		}
		return out
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := tc.node
			if node == "" {
				node = "local"
			}
			sel := SelectEndpoints(tc.eps, tc.policy, node, tc.zone)
			reach := tc.reach
			if reach == nil {
				switch {
				case len(tc.cluster) != 0 && len(tc.local) == 0:
					reach = tc.cluster
				case len(tc.local) != 0 && len(tc.cluster) == 0:
					reach = tc.local
				case tc.cluster != nil && tc.local == nil:
					reach = tc.cluster // both empty: Reachable is the set in use
				default:
					reach = tc.local
				}
			}
			got := [][]string{addrs(tc.eps, sel.Cluster), addrs(tc.eps, sel.Local), addrs(tc.eps, sel.Reachable)}
			want := [][]string{tc.cluster, tc.local, reach}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cluster, local, reachable (-want +got):\n%s\nwhy: %s", diff, sel.Why)
			}
			if wantAny := len(reach) > 0 || tc.onlyRemote; sel.HasAny != wantAny {
				t.Errorf("HasAny = %v, want %v", sel.HasAny, wantAny)
			}
		})
	}
}

// TestSelectEndpointsNoNodeName checks kube-proxy's locality rule: a proxy
// without a node name has no local endpoints, even for endpoints that
// name no node either.
func TestSelectEndpointsNoNodeName(t *testing.T) {
	eps := []Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: slicer.Conditions{Ready: True}}}
	sel := SelectEndpoints(eps, TrafficPolicy{InternalLocal: true}, "", "")
	if diff := cmp.Diff([]int{}, sel.Local); diff != "" {
		t.Errorf("Local (-want +got):\n%s", diff)
	}
	if !sel.HasAny {
		t.Errorf("HasAny = false, want true (a remote ready endpoint)")
	}
}

// TestSelectEndpointsNilConditions checks kube-proxy's reading of unset
// conditions: Ready and Serving unset are true, Terminating unset is false,
// the reverse of the controller's reading of Ready.
func TestSelectEndpointsNilConditions(t *testing.T) {
	eps := []Endpoint{{Addresses: []string{"10.0.0.1"}}, {Addresses: []string{"10.0.0.2"}, Conditions: slicer.Conditions{Ready: False}}, {}}
	sel := SelectEndpoints(eps, TrafficPolicy{}, "n", "z")
	if !slices.Equal(sel.Cluster, []int{0}) {
		t.Errorf("Cluster = %v, want [0] (unset Ready is ready; no address is ignored)", sel.Cluster)
	}
	if isReady(&eps[0]) {
		t.Errorf("controller-side ready() of an unset Ready = true, want false")
	}
}
