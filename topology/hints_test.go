package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestAddHintsUpstreamCases reproduces TestAddHints of
// k8s.io/endpointslice v0.37.2 topologycache (ratios given as CPU shares;
// float64(35)/100 is the same float as the literal 0.35).
func TestAddHintsUpstreamCases(t *testing.T) {
	tests := []struct {
		name                   string
		capacity               Capacity
		si                     SliceInfo
		wantCreate, wantUpdate []string
		wantByZone             map[string]int
		wantEvent              Event
	}{{
		name:      "empty",
		capacity:  Capacity{},
		si:        SliceInfo{},
		wantEvent: Event{"Warning", "TopologyAwareHintsDisabled", MsgInsufficientNodeInfo + ", addressType: IPv4"},
	}, {
		name:       "slice to create, no zone ratios",
		capacity:   Capacity{},
		si:         SliceInfo{ToCreate: []*Slice{slice("c0", "zone-a+")}},
		wantCreate: []string{"c0: zone-a+"},
		wantEvent:  Event{"Warning", "TopologyAwareHintsDisabled", MsgInsufficientNodeInfo + ", addressType: IPv4"},
	}, {
		name:       "slice to create with 2 endpoints, zone ratios require 3",
		capacity:   capacityOf("zone-a=3", "zone-b=4", "zone-c=3"),
		si:         SliceInfo{ToCreate: []*Slice{slice("c0", "zone-a+", "zone-b+")}},
		wantCreate: []string{"c0: zone-a+ zone-b+"},
		wantEvent:  Event{"Warning", "TopologyAwareHintsDisabled", MsgInsufficientNumberOfEndpoints + " (2 endpoints, 3 zones), addressType: IPv4"},
	}, {
		name:       "slice to create with 2 endpoints, zone ratios only require 2",
		capacity:   capacityOf("zone-a=45", "zone-b=55"),
		si:         SliceInfo{ToCreate: []*Slice{slice("c0", "zone-a+", "zone-b+")}},
		wantCreate: []string{"c0: zone-a+>zone-a zone-b+>zone-b"},
		wantByZone: map[string]int{"zone-a": 1, "zone-b": 1},
		wantEvent:  Event{"Normal", "TopologyAwareHintsEnabled", MsgTopologyAwareHintsEnabled + ", addressType: IPv4"},
	}, {
		name:       "slice to create with 2 ready, 1 unready, 1 unknown endpoints, zone ratios only require 2",
		capacity:   capacityOf("zone-a=45", "zone-b=55"),
		si:         SliceInfo{ToCreate: []*Slice{slice("c0", "zone-a+", "zone-b+", "zone-b-", "zone-b?")}},
		wantCreate: []string{"c0: zone-a+>zone-a zone-b+>zone-b zone-b- zone-b?"},
		wantByZone: map[string]int{"zone-a": 1, "zone-b": 1},
		wantEvent:  Event{"Normal", "TopologyAwareHintsEnabled", MsgTopologyAwareHintsEnabled + ", addressType: IPv4"},
	}, {
		name:     "slices to create and update within 3 zone threshold",
		capacity: capacityOf("zone-a=35", "zone-b=35", "zone-c=30"),
		si: SliceInfo{
			ToCreate: []*Slice{slice("c0", "zone-a+", "zone-b+"), slice("c1", "zone-c+", "zone-c+", "zone-a+")},
			ToUpdate: []*Slice{slice("u0", "zone-a+", "zone-a+"), slice("u1", "zone-b+", "zone-c+", "zone-a+")},
		},
		wantCreate: []string{"c0: zone-a+>zone-b zone-b+>zone-b", "c1: zone-c+>zone-c zone-c+>zone-c zone-a+>zone-a"},
		wantUpdate: []string{"u0: zone-a+>zone-a zone-a+>zone-a", "u1: zone-b+>zone-b zone-c+>zone-c zone-a+>zone-a"},
		wantByZone: map[string]int{"zone-a": 4, "zone-b": 3, "zone-c": 3},
		wantEvent:  Event{"Normal", "TopologyAwareHintsEnabled", MsgTopologyAwareHintsEnabled + ", addressType: IPv4"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			si := tc.si
			si.AddressType = "IPv4"
			r := AddHints(tc.capacity, &si, Options{})
			if diff := cmp.Diff(tc.wantCreate, render(si.ToCreate)); diff != "" {
				t.Errorf("ToCreate (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUpdate, render(si.ToUpdate)); diff != "" {
				t.Errorf("ToUpdate (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantByZone, r.HintsByZone, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("HintsByZone (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]Event{tc.wantEvent}, r.Events); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
			if r.Enabled() != (tc.wantByZone != nil) {
				t.Errorf("Enabled() = %v, want %v", r.Enabled(), tc.wantByZone != nil)
			}
		})
	}
}

// TestAddHintsUnchanged covers the validation of unchanged slices' hints:
// valid cross-zone hints are kept, missing ones or ones above a zone's
// maximum move a copy to ToUpdate and leave the original alone.
func TestAddHintsUnchanged(t *testing.T) {
	c := capacityOf("a=1000", "b=1000", "c=1000")
	keep := slice("keep", "a+>b", "b+>b", "c+>c", "a->a")
	bad := slice("bad", "a+", "b+>b")
	badOrig := render([]*Slice{bad})
	unknown := slice("unknown", "a+>x", "b+>b")
	si := SliceInfo{AddressType: "IPv4", Unchanged: []*Slice{keep, bad, unknown}, ToCreate: []*Slice{slice("new", "a+", "a+", "a+")}}
	r := AddHints(c, &si, Options{HadHints: true})
	if !r.Enabled() {
		t.Fatalf("AddHints disabled: %v", r.Fallback.Message())
	}
	if got := render(si.Unchanged); !cmp.Equal(got, []string{"keep: a+>b b+>b c+>c a->a"}) {
		t.Errorf("Unchanged = %v", got)
	}
	if got := render([]*Slice{bad}); !cmp.Equal(got, badOrig) {
		t.Errorf("the original unchanged slice was modified: %v", got)
	}
	// 10 ready endpoints: the kept slice holds b 2, c 1; the rest are
	// hinted same-zone (a 5, b 1, c 0... plus moved slices) and then a's
	// surplus moves to c.
	if diff := cmp.Diff(map[string]int{"a": 3, "b": 4, "c": 3}, r.HintsByZone); diff != "" {
		t.Errorf("HintsByZone (-want +got):\n%s", diff)
	}
	// a gives 2 (surplus 1.67, then 0.67 tied with b: the first zone wins),
	// taken from the first endpoints being written: the new slice.
	if diff := cmp.Diff([]string{"new: a+>c a+>c a+>a"}, render(si.ToCreate)); diff != "" {
		t.Errorf("ToCreate (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bad: a+>a b+>b", "unknown: a+>a b+>b"}, render(si.ToUpdate)); diff != "" {
		t.Errorf("ToUpdate (-want +got):\n%s", diff)
	}
	if len(r.Events) != 0 {
		t.Errorf("Events = %v, want none when the Service already had hints", r.Events)
	}
}

// TestGivingAndReceiving reproduces Test_getGivingAndReceivingZones.
func TestGivingAndReceiving(t *testing.T) {
	tests := []struct {
		name                 string
		desired              []float64
		allocated            []int
		wantGive, wantRecive []int
	}{
		{"all in a, 5.1/5.1/5.8", []float64{5.1, 5.1, 5.8}, []int{16, 0, 0}, []int{10, 0, 0}, []int{0, 5, 5}},
		{"all in a, 5.0/5.6/5.4", []float64{5.0, 5.6, 5.4}, []int{16, 0, 0}, []int{11, 0, 0}, []int{0, 6, 5}},
		{"b and c to a", []float64{5.0, 5.6, 5.4}, []int{0, 8, 8}, []int{0, 2, 3}, []int{5, 0, 0}},
		{"balanced", []float64{5.0, 5.0, 6.0}, []int{5, 5, 6}, nil, nil},
	}
	for _, tc := range tests {
		alloc := make([]Allocation, len(tc.desired))
		for i, d := range tc.desired {
			alloc[i].Desired = d
		}
		give, recv, _ := givingAndReceiving(alloc, tc.allocated)
		if !cmp.Equal(give, tc.wantGive) || !cmp.Equal(recv, tc.wantRecive) {
			t.Errorf("%s: givingAndReceiving = %v, %v, want %v, %v", tc.name, give, recv, tc.wantGive, tc.wantRecive)
		}
	}
}

// TestAllocateEqualZones derives where three equal zones lose Auto hints,
// the kubernetes#122437 pattern: N = 11 needs 3 × 4 = 12.
func TestAllocateEqualZones(t *testing.T) {
	c := capacityOf("a=1000", "b=1000", "c=1000")
	var off []int
	for n := 1; n <= 30; n++ {
		if _, fb := c.Allocate(n); fb.Reason != NoReason {
			off = append(off, n)
		}
	}
	want := []int{1, 2, 4, 5, 8, 11}
	if !cmp.Equal(off, want) {
		t.Errorf("equal zones disabled at N = %v, want %v", off, want)
	}
	_, fb := c.Allocate(11)
	if got, want := fb.EventMessage("IPv4"), MsgMinAllocationExceedsOverloadThreshold+" (11 endpoints, 3 zones), addressType: IPv4"; got != want {
		t.Errorf("Allocate(11) message = %q, want %q", got, want)
	}
	a, _ := c.Allocate(12)
	for _, x := range a {
		if x.Minimum != 4 || x.Maximum != 4 || x.Desired != 4 {
			t.Errorf("Allocate(12) %s = %+v, want min=max=desired=4", x.Zone, x)
		}
	}
}

func TestNewCapacity(t *testing.T) {
	n := func(zone string, milli int64, ready, cp bool) Node {
		return Node{Name: zone + "-node", Zone: zone, MilliCPU: milli, Ready: ready, ControlPlane: cp}
	}
	tests := []struct {
		name   string
		nodes  []Node
		ratios map[string]float64
	}{
		{"empty", nil, nil},
		{"single node", []Node{n("zone-a", 1000, true, false)}, nil},
		{"single zone", []Node{n("zone-a", 1000, true, false), n("zone-a", 1000, true, false)}, nil},
		{"2 zones", []Node{n("zone-a", 1000, true, false), n("zone-b", 1000, true, false)}, map[string]float64{"zone-a": 0.5, "zone-b": 0.5}},
		{"2 zones, unready node in 1, ready node in 1", []Node{n("zone-a", 1000, false, false), n("zone-b", 1000, true, false)}, nil},
		{"2 zones, control plane node in 1, ready node in 1", []Node{n("zone-a", 1000, true, false), n("zone-b", 1000, true, true)}, nil},
		{"2 zones, unready node in 1, ready node in 2", []Node{n("zone-a", 1000, true, false), n("zone-b", 1000, true, false), n("zone-b", 1000, false, false)}, map[string]float64{"zone-a": 0.5, "zone-b": 0.5}},
		{"2 zones, control plane node in 1, ready node in 2", []Node{n("zone-a", 1000, true, false), n("zone-b", 1000, true, false), n("zone-b", 1000, true, true)}, map[string]float64{"zone-a": 0.5, "zone-b": 0.5}},
		{"3 zones, 4 nodes in 1, 2 nodes in 1, 1 node in 1", []Node{
			n("zone-a", 1000, true, false), n("zone-a", 1000, true, false), n("zone-a", 1000, true, false), n("zone-a", 2000, true, false),
			n("zone-b", 3000, true, false), n("zone-b", 1500, true, false), n("zone-c", 500, true, false),
		}, map[string]float64{"zone-a": 0.5, "zone-b": 0.45, "zone-c": 0.05}},
		{"a node without a zone", []Node{n("zone-a", 1000, true, false), n("", 1000, true, false), n("zone-b", 1000, true, false)}, nil},
		{"a node without CPU", []Node{n("zone-a", 1000, true, false), n("zone-b", 0, true, false)}, nil},
		{"an unready node without a zone is ignored", []Node{n("zone-a", 1000, true, false), n("", 0, false, false), n("zone-b", 1000, true, false)}, map[string]float64{"zone-a": 0.5, "zone-b": 0.5}},
	}
	for _, tc := range tests {
		c := NewCapacity(tc.nodes)
		var got map[string]float64
		if c.Sufficient() {
			got = map[string]float64{}
			for _, z := range c.Zones() {
				got[z] = c.Ratio(z)
			}
		}
		if diff := cmp.Diff(tc.ratios, got); diff != "" {
			t.Errorf("%s: ratios (-want +got):\n%s", tc.name, diff)
		}
	}
	if got := NewCapacity([]Node{{Name: "n1", Zone: "a", MilliCPU: 1, Ready: true}, {Name: "bad", Ready: true}}).InsufficientNode(); got != "bad" {
		t.Errorf("InsufficientNode() = %q, want %q", got, "bad")
	}
}

func TestAddHintsNoZone(t *testing.T) {
	c := capacityOf("a=1", "b=1")
	hinted := slice("old", "a+>a", "b+>b")
	si := SliceInfo{AddressType: "IPv6", ToCreate: []*Slice{slice("c", "a+>a", "+", "b+", "a+")}, Unchanged: []*Slice{hinted}}
	r := AddHints(c, &si, Options{})
	if r.Fallback.Reason != NoZoneSpecified {
		t.Fatalf("Fallback = %+v, want NoZoneSpecified", r.Fallback)
	}
	want := []string{"c: a+ + b+ a+"}
	if diff := cmp.Diff(want, render(si.ToCreate)); diff != "" {
		t.Errorf("ToCreate (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"old: a+ b+"}, render(si.ToUpdate)); diff != "" {
		t.Errorf("ToUpdate (-want +got):\n%s", diff)
	}
	if got, want := r.Events[0].Message, MsgNoZoneSpecified+", addressType: IPv6"; got != want {
		t.Errorf("event message %q, want %q", got, want)
	}
}

func TestRemoveHints(t *testing.T) {
	clean := slice("clean", "a+", "b-")
	hinted := slice("hinted", "a+>a", "b+>b", "c->c")
	orig := render([]*Slice{hinted})
	si := SliceInfo{
		ToCreate:  []*Slice{slice("c", "a+>b", "b+")},
		ToUpdate:  []*Slice{slice("u", "a->a")},
		Unchanged: []*Slice{clean, hinted},
	}
	RemoveHints(&si)
	if diff := cmp.Diff([]string{"c: a+ b+"}, render(si.ToCreate)); diff != "" {
		t.Errorf("ToCreate (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"u: a-", "hinted: a+ b+ c-"}, render(si.ToUpdate)); diff != "" {
		t.Errorf("ToUpdate (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"clean: a+ b-"}, render(si.Unchanged)); diff != "" {
		t.Errorf("Unchanged (-want +got):\n%s", diff)
	}
	if got := render([]*Slice{hinted}); !cmp.Equal(got, orig) {
		t.Errorf("RemoveHints modified an unchanged slice: %v", got)
	}
}

// TestRedistribute reproduces Test_redistributeHints: endpoints of giving
// zones, first first, are re-hinted for the receiving zones.
func TestRedistribute(t *testing.T) {
	c := capacityOf("zone-a=1", "zone-b=1", "zone-c=1")
	tests := []struct {
		name              string
		slices            []*Slice
		give, recv, order []int
		want              []int // allocated change per zone
	}{
		{"empty", nil, []int{0, 0, 0}, []int{0, 0, 0}, nil, []int{0, 0, 0}},
		{"single endpoint", []*Slice{slice("s", "zone-a+>zone-a")}, []int{1, 0, 0}, []int{0, 1, 0}, []int{1}, []int{-1, 1, 0}},
		{"endpoints from 1 zone redistributed to 2 other zones", []*Slice{slice("s", "zone-a+>zone-a", "zone-a+>zone-a", "zone-a+>zone-a")},
			[]int{2, 0, 0}, []int{0, 1, 1}, []int{1, 2}, []int{-2, 1, 1}},
	}
	for _, tc := range tests {
		tbl := newZoneTable(c)
		allocated := make([]int, 3)
		redistribute(&SliceInfo{ToCreate: tc.slices}, &tbl, tc.give, tc.recv, tc.order, allocated)
		if !cmp.Equal(allocated, tc.want) {
			t.Errorf("%s: changes %v, want %v", tc.name, allocated, tc.want)
		}
	}
}
