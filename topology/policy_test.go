package topology

import (
	"github.com/fairslice/fairslice/slicer"
	"testing"

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

// TestApplyTrafficDistribution reproduces TestReconcile_TrafficDistribution
// of k8s.io/endpointslice (U20): pod0 in zone-a, pods 1-3 in zone-b, pods
// 4-5 in zone-c, one slice to create.
func TestApplyTrafficDistribution(t *testing.T) {
	mk := func() *SliceInfo {
		s := &Slice{Name: "new"}
		zones := []string{"zone-a", "zone-b", "zone-b", "zone-b", "zone-c", "zone-c"}
		for i, z := range zones {
			s.Endpoints = append(s.Endpoints, Endpoint{Addresses: []string{string(rune('0' + i))}, Zone: z, NodeName: "node-" + z[5:], Conditions: slicer.Conditions{Ready: True}})
		}
		return &SliceInfo{AddressType: "IPv4", ToCreate: []*Slice{s}}
	}
	c := capacityOf("zone-a=100", "zone-b=100", "zone-c=100")
	tests := []struct {
		name   string
		ann    map[string]string
		td     string
		byZone map[string]int
		nodes  bool
	}{
		{"PreferClose, annotation Disabled", map[string]string{AnnotationTopologyMode: "Disabled"}, PreferClose, map[string]int{"zone-a": 1, "zone-b": 3, "zone-c": 2}, false},
		{"PreferClose, annotation Auto: Auto wins", map[string]string{AnnotationTopologyMode: "Auto"}, PreferClose, map[string]int{"zone-a": 2, "zone-b": 2, "zone-c": 2}, false},
		{"no field, no annotation", nil, "", map[string]int{}, false},
		{"PreferSameNode", map[string]string{AnnotationTopologyMode: "Disabled"}, PreferSameNode, map[string]int{"zone-a": 1, "zone-b": 3, "zone-c": 2}, true},
	}
	for _, tc := range tests {
		si := mk()
		r := Apply(c, si, PolicyFor(tc.ann, tc.td, true), Options{})
		if diff := cmp.Diff(tc.byZone, r.HintsByZone); diff != "" {
			t.Errorf("%s: HintsByZone (-want +got):\n%s", tc.name, diff)
		}
		for _, e := range si.ToCreate[0].Endpoints {
			if got := e.Hints != nil && len(e.Hints.ForNodes) == 1 && e.Hints.ForNodes[0] == e.NodeName; got != tc.nodes {
				t.Errorf("%s: endpoint %s node hint %v, want %v", tc.name, address(&e), e.Hints, tc.nodes)
			}
		}
	}
	// PreferSameZone with the gate off gives no hints.
	si := mk()
	if r := Apply(c, si, PolicyFor(nil, PreferSameZone, false), Options{}); len(r.HintsByZone) != 0 || r.Enabled() {
		t.Errorf("PreferSameZone with the gate off: %+v", r)
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
