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
		Conditions: slicer.Conditions{Ready: slicer.Of(strings.Contains(flags, "R")), Serving: slicer.Of(strings.Contains(flags, "S") || strings.Contains(flags, "R")),
			Terminating: slicer.Of(strings.Contains(flags, "T"))}}
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

// TestSelectEndpointsUpstreamCases reproduces TestCategorizeEndpoints of
// k8s.io/kubernetes v1.37.2 pkg/proxy (with PreferSameTrafficDistribution
// on, as it is locked since 1.35). nil sets mean "not used".
func TestSelectEndpointsUpstreamCases(t *testing.T) {
	eTPLocal := TrafficPolicy{ExternalLocal: true, External: true}
	iTPLocal := TrafficPolicy{InternalLocal: true, External: true}
	tests := []struct {
		name                  string
		node, zone            string
		policy                TrafficPolicy
		eps                   []Endpoint
		cluster, local, reach []string
		hasAny                bool
	}{
		{"topology used", "local", "zone-a", TrafficPolicy{}, []Endpoint{
			pe("10.1.2.3", "R", "zone-a", ""), pe("10.1.2.4", "R", "zone-b", ""), pe("10.1.2.5", "R", "zone-c", ""), pe("10.1.2.6", "R", "zone-a", ""),
		}, []string{"10.1.2.3", "10.1.2.6"}, nil, nil, true},
		{"externalTrafficPolicy: Local, topology ignored for Local endpoints", "local", "zone-a", eTPLocal, []Endpoint{
			pe("10.1.2.3", "RL", "zone-a", ""), pe("10.1.2.4", "RL", "zone-b", ""), pe("10.1.2.5", "R", "zone-c", ""), pe("10.1.2.6", "R", "zone-a", ""),
		}, []string{"10.1.2.3", "10.1.2.6"}, []string{"10.1.2.3", "10.1.2.4"}, []string{"10.1.2.3", "10.1.2.6", "10.1.2.4"}, true},
		{"internalTrafficPolicy: Local, topology ignored for Local endpoints", "local", "zone-a", iTPLocal, []Endpoint{
			pe("10.1.2.3", "RL", "zone-a", ""), pe("10.1.2.4", "RL", "zone-b", ""), pe("10.1.2.5", "R", "zone-c", ""), pe("10.1.2.6", "R", "zone-a", ""),
		}, []string{"10.1.2.3", "10.1.2.6"}, []string{"10.1.2.3", "10.1.2.4"}, []string{"10.1.2.3", "10.1.2.6", "10.1.2.4"}, true},
		{"empty node labels", "local", "", TrafficPolicy{}, []Endpoint{pe("10.1.2.3", "R", "zone-a", "")}, []string{"10.1.2.3"}, nil, nil, true},
		{"node in different zone, no endpoint filtering", "local", "zone-b", TrafficPolicy{}, []Endpoint{pe("10.1.2.3", "R", "zone-a", "")}, []string{"10.1.2.3"}, nil, nil, true},
		{"unready endpoint", "local", "zone-a", TrafficPolicy{}, []Endpoint{
			pe("10.1.2.3", "R", "zone-a", ""), pe("10.1.2.4", "R", "zone-b", ""), pe("10.1.2.5", "R", "zone-c", ""), pe("10.1.2.6", "", "zone-a", ""),
		}, []string{"10.1.2.3"}, nil, nil, true},
		{"only unready endpoints in same zone (should not filter)", "local", "zone-a", TrafficPolicy{}, []Endpoint{
			pe("10.1.2.3", "", "zone-a", ""), pe("10.1.2.4", "R", "zone-b", ""), pe("10.1.2.5", "R", "zone-c", ""), pe("10.1.2.6", "", "zone-a", ""),
		}, []string{"10.1.2.4", "10.1.2.5"}, nil, nil, true},
		{"missing hints, no filtering applied", "local", "zone-a", TrafficPolicy{}, []Endpoint{
			pe("10.1.2.3", "R", "zone-a", ""), pe("10.1.2.4", "R", "zone-b", ""), pe("10.1.2.5", "R", "", ""), pe("10.1.2.6", "R", "zone-a", ""),
		}, []string{"10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.6"}, nil, nil, true},
		{"multiple hints per endpoint", "local", "zone-c", TrafficPolicy{}, []Endpoint{
			pe("10.1.2.3", "R", "zone-a,zone-b,zone-c", ""), pe("10.1.2.4", "R", "zone-b,zone-c", ""), pe("10.1.2.5", "R", "zone-b,zone-d", ""), pe("10.1.2.6", "R", "zone-c", ""),
		}, []string{"10.1.2.3", "10.1.2.4", "10.1.2.6"}, nil, nil, true},
		{"PreferSameNode available", "node-1", "zone-a", TrafficPolicy{}, []Endpoint{
			pe("10.1.2.3", "R", "zone-a", "node-1"), pe("10.1.2.4", "R", "zone-b", "node-2"), pe("10.1.2.5", "R", "zone-c", "node-3"), pe("10.1.2.6", "R", "zone-a", "node-4"),
		}, []string{"10.1.2.3"}, nil, nil, true},
		{"PreferSameNode ignored if some endpoints unhinted", "node-1", "zone-a", TrafficPolicy{}, []Endpoint{
			pe("10.1.2.3", "R", "zone-a", "node-1"), pe("10.1.2.4", "R", "", ""), pe("10.1.2.5", "R", "zone-c", "node-3"), pe("10.1.2.6", "R", "zone-a", "node-4"),
		}, []string{"10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.6"}, nil, nil, true},
		{"PreferSameNode falls back to PreferSameZone if no endpoint for node", "node-0", "zone-a", TrafficPolicy{}, []Endpoint{
			pe("10.1.2.3", "R", "zone-a", "node-1"), pe("10.1.2.4", "R", "zone-b", "node-2"), pe("10.1.2.5", "R", "zone-c", "node-3"), pe("10.1.2.6", "R", "zone-a", "node-4"),
		}, []string{"10.1.2.3", "10.1.2.6"}, nil, nil, true},
		{"conflicting topology and localness require merging allEndpoints", "local", "zone-a", eTPLocal, []Endpoint{
			pe("10.0.0.0", "RL", "zone-a", ""), pe("10.0.0.1", "RL", "zone-b", ""), pe("10.0.0.2", "R", "zone-a", ""), pe("10.0.0.3", "R", "zone-b", ""),
		}, []string{"10.0.0.0", "10.0.0.2"}, []string{"10.0.0.0", "10.0.0.1"}, []string{"10.0.0.0", "10.0.0.2", "10.0.0.1"}, true},
		{"Cluster traffic policy, all endpoints are terminating", "local", "", TrafficPolicy{}, []Endpoint{
			pe("10.0.0.0", "STL", "", ""), pe("10.0.0.1", "ST", "", ""),
		}, []string{"10.0.0.0", "10.0.0.1"}, nil, nil, true},
		{"iTP: Local, eTP: Local, all endpoints remote", "local", "", TrafficPolicy{InternalLocal: true, ExternalLocal: true, External: true}, []Endpoint{
			pe("10.0.0.0", "R", "", ""), pe("10.0.0.1", "R", "", ""),
		}, []string{"10.0.0.0", "10.0.0.1"}, []string{}, []string{"10.0.0.0", "10.0.0.1"}, true},
		{"iTP: Cluster, eTP: Local, with terminating endpoints", "local", "", eTPLocal, []Endpoint{
			pe("10.0.0.0", "R", "", ""), pe("10.0.0.1", "L", "", ""), pe("10.0.0.2", "STL", "", ""), pe("10.0.0.3", "ST", "", ""),
		}, []string{"10.0.0.0"}, []string{"10.0.0.2"}, []string{"10.0.0.0", "10.0.0.2"}, true},
		{"no cluster endpoints for iTP:Local internal-only service", "local", "", TrafficPolicy{InternalLocal: true}, []Endpoint{
			pe("10.0.0.0", "R", "", ""), pe("10.0.0.1", "RL", "", ""),
		}, nil, []string{"10.0.0.1"}, []string{"10.0.0.1"}, true},
		{"single endpoint not ready, not serving, not terminating", "local", "", TrafficPolicy{}, []Endpoint{
			pe("10.0.0.0", "", "", ""),
		}, []string{}, nil, nil, false},
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
			sel := SelectEndpoints(tc.eps, tc.policy, tc.node, tc.zone)
			reach := tc.reach
			if reach == nil {
				reach = tc.cluster
				if reach == nil {
					reach = tc.local
				}
			}
			got := [][]string{addrs(tc.eps, sel.Cluster), addrs(tc.eps, sel.Local), addrs(tc.eps, sel.Reachable)}
			want := [][]string{tc.cluster, tc.local, reach}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cluster, local, reachable (-want +got):\n%s\nwhy: %s", diff, sel.Why)
			}
			if sel.HasAny != tc.hasAny {
				t.Errorf("HasAny = %v, want %v", sel.HasAny, tc.hasAny)
			}
		})
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
