package topology

import (
	"fmt"
	"testing"

	"github.com/fairslice/fairslice/slicer"

	"github.com/google/go-cmp/cmp"
)

func TestPolicyFor(t *testing.T) {
	const mode, old = AnnotationTopologyMode, AnnotationTopologyAwareHints
	tests := []struct {
		ann        map[string]string
		td         string
		preferSame bool
		want       Policy
	}{
		{nil, "", true, PolicyNone},
		{map[string]string{mode: "Auto"}, "", true, PolicyAuto},
		{map[string]string{mode: "auto"}, "", true, PolicyAuto},
		{map[string]string{mode: "aUto"}, "", true, PolicyNone},
		{map[string]string{mode: "Auto", old: "Disabled"}, "", true, PolicyNone}, // the deprecated key decides
		{map[string]string{mode: "Disabled", old: "Auto"}, "", true, PolicyAuto},
		{map[string]string{mode: "Auto"}, PreferClose, true, PolicyAuto}, // the annotation wins
		{map[string]string{mode: "Disabled"}, PreferClose, true, PolicyPreferClose},
		{nil, PreferSameZone, true, PolicyPreferClose},
		{nil, PreferSameZone, false, PolicyNone},
		{nil, PreferSameNode, true, PolicyPreferSameNode},
		{nil, PreferSameNode, false, PolicyNone},
		{nil, "Bogus", true, PolicyNone},
	}
	for _, tc := range tests {
		if got := PolicyFor(tc.ann, tc.td, tc.preferSame); got != tc.want {
			t.Errorf("PolicyFor(%v, %q, %v) = %v, want %v", tc.ann, tc.td, tc.preferSame, got, tc.want)
		}
	}
}

// TestApplyTrafficDistribution reproduces all 5 cases of
// TestReconcile_TrafficDistribution of k8s.io/endpointslice v0.37.2
// (U20): pod0 on node-0 in zone-a, pods 1-3 on node-1 in zone-b, pods 4-5
// on node-2 in zone-c, equal CPU, one slice to create, the topology
// annotation under upstream's (deprecated) key. Upstream's {"": 6} (six
// endpoints without hints) is an empty HintsByZone with no hint set.
func TestApplyTrafficDistribution(t *testing.T) {
	mk := func() *SliceInfo {
		s := &Slice{Name: "new"}
		nodes := []string{"node-0", "node-1", "node-1", "node-1", "node-2", "node-2"}
		for i, n := range nodes {
			z := "zone-" + string(rune('a'+n[5]-'0'))
			s.Endpoints = append(s.Endpoints, Endpoint{Addresses: []string{fmt.Sprintf("10.0.0.%d", i)}, Zone: z, NodeName: n, Conditions: slicer.Conditions{Ready: True}})
		}
		return &SliceInfo{AddressType: "IPv4", ToCreate: []*Slice{s}}
	}
	c := capacityOf("zone-a=100", "zone-b=100", "zone-c=100")
	tests := []struct {
		name       string
		preferSame bool
		td, ann    string
		byZone     map[string]int
		byNode     map[string]int
		cross      int
	}{
		{"trafficDistribution=PreferClose, topologyAnnotation=Disabled", false, PreferClose, "Disabled",
			map[string]int{"zone-a": 1, "zone-b": 3, "zone-c": 2}, map[string]int{}, 0},
		{"trafficDistribution=PreferClose, topologyAnnotation=Auto", false, PreferClose, "Auto",
			map[string]int{"zone-a": 2, "zone-b": 2, "zone-c": 2}, map[string]int{}, 1},
		{"trafficDistribution=nil, topologyAnnotation=<empty>", false, "", "", map[string]int{}, map[string]int{}, 0},
		{"trafficDistribution=PreferSameNode, PSTD enabled", true, PreferSameNode, "Disabled",
			map[string]int{"zone-a": 1, "zone-b": 3, "zone-c": 2}, map[string]int{"node-0": 1, "node-1": 3, "node-2": 2}, 0},
		{"trafficDistribution=PreferSameZone, PSTD disabled", false, PreferSameZone, "Disabled", map[string]int{}, map[string]int{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			si := mk()
			r := Apply(c, si, PolicyFor(map[string]string{AnnotationTopologyAwareHints: tc.ann}, tc.td, tc.preferSame), Options{})
			zones, nodes, cross := map[string]int{}, map[string]int{}, 0
			for _, e := range si.ToCreate[0].Endpoints {
				if e.Hints == nil {
					continue
				}
				for _, z := range e.Hints.ForZones {
					zones[z]++
					if z != e.Zone {
						cross++
					}
				}
				for _, n := range e.Hints.ForNodes {
					nodes[n]++
				}
			}
			got := []any{r.HintsByZone, zones, nodes, cross}
			want := []any{tc.byZone, tc.byZone, tc.byNode, tc.cross}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("HintsByZone, zone hints, node hints, cross-zone (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReconcileTrafficDistributionUnchanged(t *testing.T) {
	good := slice("good", "a+>a", "b+>b", "c-")
	stale := slice("stale", "a+>b", "b+>b")
	zoneless := slice("zoneless", "+>a")
	si := &SliceInfo{Unchanged: []*Slice{good, stale, zoneless}}
	ReconcileTrafficDistribution(si, PolicyPreferClose)
	if diff := cmp.Diff([]string{"good: a+>a b+>b c-"}, render(si.Unchanged)); diff != "" {
		t.Errorf("Unchanged (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"stale: a+>a b+>b", "zoneless: +"}, render(si.ToUpdate)); diff != "" {
		t.Errorf("ToUpdate (-want +got):\n%s", diff)
	}
	// Switching to PreferSameNode rewrites slices without node hints.
	withNode := slice("n", "a+>a")
	withNode.Endpoints[0].NodeName = "node-1"
	si = &SliceInfo{Unchanged: []*Slice{withNode}}
	ReconcileTrafficDistribution(si, PolicyPreferSameNode)
	if diff := cmp.Diff([]string{"n: a+>a@node-1"}, render(si.ToUpdate)); diff != "" {
		t.Errorf("PreferSameNode ToUpdate (-want +got):\n%s", diff)
	}
}

func TestApplyDisabledEvent(t *testing.T) {
	si := &SliceInfo{AddressType: "IPv4", Unchanged: []*Slice{slice("s", "a+>a")}}
	r := Apply(Capacity{}, si, PolicyNone, Options{HadHints: true})
	want := []Event{{"Warning", "TopologyAwareHintsDisabled", "Topology Aware Hints has been disabled, addressType: IPv4"}}
	if diff := cmp.Diff(want, r.Events); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
	if r.Fallback.Reason != HintsDisabled || len(si.ToUpdate) != 1 || anyHints(si.ToUpdate[0]) {
		t.Errorf("Apply(PolicyNone) = %+v, plan %v", r, render(si.ToUpdate))
	}
}

// TestAutoRequestedUpstreamCases reproduces all 19 cases of
// Test_hintsEnabled of k8s.io/endpointslice v0.37.2 (repeated cases
// included, as upstream lists them).
func TestAutoRequestedUpstreamCases(t *testing.T) {
	const old, mode = AnnotationTopologyAwareHints, AnnotationTopologyMode
	tests := []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{"empty annotations", nil, false},
		{"different annotations", map[string]string{"topology-hints": "enabled"}, false},
		{"hints annotation == enabled", map[string]string{old: "enabled"}, false},
		{"hints annotation == aUto", map[string]string{old: "aUto"}, false},
		{"hints annotation == auto", map[string]string{old: "auto"}, true},
		{"hints annotation == Auto", map[string]string{old: "Auto"}, true},
		{"hints annotation == disabled", map[string]string{old: "disabled"}, false},
		{"mode annotation == enabled", map[string]string{mode: "enabled"}, false},
		{"mode annotation == aUto", map[string]string{mode: "aUto"}, false},
		{"mode annotation == auto", map[string]string{mode: "auto"}, true},
		{"mode annotation == Auto", map[string]string{mode: "Auto"}, true},
		{"mode annotation == disabled", map[string]string{mode: "disabled"}, false},
		{"mode annotation == enabled", map[string]string{mode: "enabled"}, false},
		{"mode annotation == aUto", map[string]string{mode: "aUto"}, false},
		{"mode annotation == auto", map[string]string{mode: "auto"}, true},
		{"mode annotation == Auto", map[string]string{mode: "Auto"}, true},
		{"mode annotation == disabled", map[string]string{mode: "disabled"}, false},
		{"mode annotation == disabled, hints annotation == auto", map[string]string{mode: "disabled", old: "auto"}, true},
		{"mode annotation == auto, hints annotation == disabled", map[string]string{mode: "auto", old: "disabled"}, false},
	}
	if len(tests) != 19 {
		t.Fatalf("%d cases, want upstream's 19", len(tests))
	}
	for _, tc := range tests {
		if got := AutoRequested(tc.annotations); got != tc.want {
			t.Errorf("%s: AutoRequested(%v) = %v, want %v", tc.name, tc.annotations, got, tc.want)
		}
	}
}
