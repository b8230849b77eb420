package topology

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// tdEndpoint builds an endpoint from "ADDR ZONE NODE STATE [HINTS]": ZONE
// "_" is none, STATE is + (ready) or - (not ready), and HINTS is
// ">zones@nodes" with comma-separated lists, either part empty.
func tdEndpoint(spec string) Endpoint {
	f := strings.Fields(spec)
	e := Endpoint{Addresses: []string{f[0]}, NodeName: f[2]}
	if f[1] != "_" {
		e.Zone = f[1]
	}
	e.Conditions.Ready = map[string]Condition{"+": True, "-": False}[f[3]]
	if len(f) == 5 {
		zones, nodes, _ := strings.Cut(strings.TrimPrefix(f[4], ">"), "@")
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

// tdSlices builds one unnamed slice per argument from endpoint specs.
func tdSlices(slices ...[]string) []*Slice {
	var out []*Slice
	for _, specs := range slices {
		s := &Slice{}
		for _, spec := range specs {
			s.Endpoints = append(s.Endpoints, tdEndpoint(spec))
		}
		out = append(out, s)
	}
	return out
}

// TestReconcileTrafficDistributionUpstreamCases reproduces all 9 cases of
// TestReconcileHints of k8s.io/endpointslice v0.37.2 trafficdist, with the
// PreferSame traffic distributions enabled (locked on since 1.35): the
// trafficDistribution value goes through PolicyFor, and the three plan
// lists are compared whole with cmp.Diff (empty equals nil, as upstream
// compares them).
func TestReconcileTrafficDistributionUpstreamCases(t *testing.T) {
	type lists struct{ create, update, unchanged []*Slice }
	// The plan most cases start from: two slices to create, two to update.
	plan := func(hint func(zone, node string) string) lists {
		h := func(addr, zone, node string) string {
			return addr + " " + zone + " " + node + " + " + hint(zone, node)
		}
		return lists{
			create: tdSlices(
				[]string{h("10.0.0.1", "zone-a", "node-1"), h("10.0.0.2", "zone-b", "node-2")},
				[]string{h("10.0.0.3", "zone-a", "node-3"), h("10.0.0.4", "zone-b", "node-4")}),
			update: tdSlices(
				[]string{h("10.0.0.5", "zone-a", "node-5"), h("10.0.0.6", "zone-a", "node-6")},
				[]string{h("10.0.0.7", "zone-b", "node-7"), h("10.0.0.8", "zone-c", "node-8")}),
		}
	}
	none := func(string, string) string { return "" }
	zoneHint := func(z, _ string) string { return ">" + z }
	zoneNodeHint := func(z, n string) string { return ">" + z + "@" + n }
	noZones := func(hint func(string, string) string) lists {
		l := plan(hint)
		for _, list := range [][]*Slice{l.create, l.update} {
			for _, s := range list {
				for i := range s.Endpoints {
					s.Endpoints[i].Zone = ""
					if h := s.Endpoints[i].Hints; h != nil {
						h.ForZones = nil
					}
				}
			}
		}
		return l
	}
	tests := []struct {
		name     string
		td       string
		in, want lists
	}{
		{"should set zone hints with PreferClose", PreferClose, plan(none), plan(zoneHint)},
		{"should set zone hints with PreferSameZone", PreferSameZone, plan(none), plan(zoneHint)},
		{"should set zone and node hints with PreferSameNode", PreferSameNode, plan(none), plan(zoneNodeHint)},
		{"should correct incorrect hints with PreferClose", PreferClose,
			lists{
				update:    tdSlices([]string{"10.0.0.1 zone-a node-1 + >zone-b"}),
				unchanged: tdSlices([]string{"10.0.0.2 zone-b node-2 + >zone-c"}, []string{"10.0.0.3 zone-c node-3 +"}),
			},
			lists{update: tdSlices(
				[]string{"10.0.0.1 zone-a node-1 + >zone-a"}, []string{"10.0.0.2 zone-b node-2 + >zone-b"}, []string{"10.0.0.3 zone-c node-3 + >zone-c"})}},
		{"should not create hints with PreferClose if there are no zones", PreferClose, noZones(none), noZones(none)},
		{"should create only node hints with PreferSameNode if there are no zones", PreferSameNode, noZones(none), noZones(zoneNodeHint)},
		{"unready endpoints should not trigger updates", PreferClose,
			lists{unchanged: tdSlices([]string{"10.0.0.2 zone-b node-2 -"})},
			lists{unchanged: tdSlices([]string{"10.0.0.2 zone-b node-2 -"})}},
		{"should remove hints when trafficDistribution is unrecognized", "Unknown",
			lists{
				create: tdSlices([]string{"10.0.0.1 zone-a node-1 + >zone-a", "10.0.0.2 zone-b node-2 + >zone-b"}, []string{"10.0.0.3 zone-a node-3 + >zone-a"}),
				update: tdSlices([]string{"10.0.0.5 zone-a node-5 + >zone-a"}),
			},
			lists{
				create: tdSlices([]string{"10.0.0.1 zone-a node-1 +", "10.0.0.2 zone-b node-2 +"}, []string{"10.0.0.3 zone-a node-3 +"}),
				update: tdSlices([]string{"10.0.0.5 zone-a node-5 +"}),
			}},
		{"should remove hints when trafficDistribution is unset", "",
			lists{
				update:    tdSlices([]string{"10.0.0.5 zone-a node-5 + >zone-a"}),
				unchanged: tdSlices([]string{"10.0.0.6 zone-b node-6 + >zone-b"}),
			},
			lists{update: tdSlices([]string{"10.0.0.5 zone-a node-5 +"}, []string{"10.0.0.6 zone-b node-6 +"})}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			si := &SliceInfo{ToCreate: tc.in.create, ToUpdate: tc.in.update, Unchanged: tc.in.unchanged}
			ReconcileTrafficDistribution(si, PolicyFor(nil, tc.td, true))
			for _, c := range []struct {
				what      string
				want, got []*Slice
			}{{"ToCreate", tc.want.create, si.ToCreate}, {"ToUpdate", tc.want.update, si.ToUpdate}, {"Unchanged", tc.want.unchanged, si.Unchanged}} {
				if diff := cmp.Diff(c.want, c.got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s (-want +got):\n%s", c.what, diff)
				}
			}
		})
	}
}

// TestReconcileTrafficDistributionDoesNotMutateUnchanged reproduces
// TestReconcileHints_doesNotMutateUnchangedSlices of k8s.io/endpointslice
// v0.37.2 trafficdist: an unchanged slice that needs hints is copied, not
// modified.
func TestReconcileTrafficDistributionDoesNotMutateUnchanged(t *testing.T) {
	orig := tdSlices([]string{"10.0.0.1 zone-a node-1 +"})[0]
	clone := orig.Clone()
	si := &SliceInfo{Unchanged: []*Slice{orig}}
	ReconcileTrafficDistribution(si, PolicyPreferClose)
	if diff := cmp.Diff(&clone, orig); diff != "" {
		t.Errorf("the unchanged slice was modified (-before +after):\n%s", diff)
	}
	if len(si.ToUpdate) != 1 || si.ToUpdate[0].Endpoints[0].Hints == nil {
		t.Errorf("ToUpdate = %v, want the hinted copy", render(si.ToUpdate))
	}
}
