package topology

import (
	"slices"
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

// TestGivingAndReceiving reproduces all 9 cases of
// Test_getGivingAndReceivingZones of k8s.io/endpointslice v0.37.2
// topologycache (zones zone-a, zone-b, zone-c in that order; a zone
// missing from upstream's allocated map has 0), plus one of ours. Upstream
// returns maps; here per-zone counts, compared as maps without zeros.
func TestGivingAndReceiving(t *testing.T) {
	tests := []struct {
		name               string
		desired            []float64
		allocated          []int
		wantGive, wantRecv map[string]int
	}{
		{"empty", nil, nil, map[string]int{}, map[string]int{}},
		{"simple allocation with no need for rebalancing", []float64{1.2, 1.1, 1.0}, []int{1, 1, 1}, map[string]int{}, map[string]int{}},
		{"preference for same zone even when giving an extra endpoint would result in slightly better distribution",
			[]float64{5.1, 5.1, 5.8}, []int{16, 0, 0}, map[string]int{"zone-a": 10}, map[string]int{"zone-b": 5, "zone-c": 5}},
		{"when 2 zones need < 1 endpoint, give to zone that needs endpoint most",
			[]float64{5.0, 5.6, 5.4}, []int{16, 0, 0}, map[string]int{"zone-a": 11}, map[string]int{"zone-b": 6, "zone-c": 5}},
		{"when 2 zones have extra endpoints, give from zone with most extra",
			[]float64{5.0, 5.6, 5.4}, []int{0, 8, 8}, map[string]int{"zone-b": 2, "zone-c": 3}, map[string]int{"zone-a": 5}},
		{"ensure function can handle unexpected data (more allocated than allocations)",
			[]float64{5, 5, 5}, []int{6, 6, 6}, map[string]int{}, map[string]int{}},
		{"ensure function can handle unexpected data (negative allocations)",
			[]float64{-5, -5, -5}, []int{6, 6, 6}, map[string]int{}, map[string]int{}},
		{"ensure function can handle unexpected data (negative allocated)",
			[]float64{5, 5, 5}, []int{-4, -3, -2}, map[string]int{}, map[string]int{}},
		{"ensure function can handle unexpected data (negative for 1 zone)",
			[]float64{5, 5, 5}, []int{-40, 20, 20}, map[string]int{"zone-b": 15, "zone-c": 15}, map[string]int{"zone-a": 30}},
		// Ours: every zone exactly at its target.
		{"balanced", []float64{5.0, 5.0, 6.0}, []int{5, 5, 6}, map[string]int{}, map[string]int{}},
	}
	names := []string{"zone-a", "zone-b", "zone-c"}
	asMap := func(v []int) map[string]int {
		m := map[string]int{}
		for i, n := range v {
			if n != 0 {
				m[names[i]] = n
			}
		}
		return m
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			alloc := make([]Allocation, len(tc.desired))
			for i, d := range tc.desired {
				alloc[i].Desired = d
			}
			give, recv, order := givingAndReceiving(alloc, tc.allocated)
			if diff := cmp.Diff([]map[string]int{tc.wantGive, tc.wantRecv}, []map[string]int{asMap(give), asMap(recv)}); diff != "" {
				t.Errorf("giving, receiving (-want +got):\n%s", diff)
			}
			for _, r := range order {
				if recv[r] == 0 {
					t.Errorf("order %v names zone %d, which receives nothing", order, r)
				}
			}
			if len(order) != len(asMap(recv)) {
				t.Errorf("order %v, want one entry per receiving zone %v", order, recv)
			}
		})
	}
}

// TestValidUnchangedUpstreamCases reproduces all 8 cases of
// Test_getHintsByZone of k8s.io/endpointslice v0.37.2 topologycache
// through keepValidUnchanged with one unchanged slice: upstream's nil
// (invalid hints) is the slice moving to ToUpdate; otherwise the slice
// stays unchanged and its hints per zone are what it adds to allocated.
func TestValidUnchangedUpstreamCases(t *testing.T) {
	tests := []struct {
		name      string
		slice     *Slice
		maximum   map[string]int // upstream's allocations
		allocated map[string]int
		want      map[string]int
	}{
		{"empty", &Slice{}, map[string]int{}, map[string]int{}, map[string]int{}},
		{"single zone hint", slice("s", "zone-a+>zone-a"), map[string]int{"zone-a": 3}, map[string]int{"zone-a": 1}, map[string]int{"zone-a": 1}},
		{"single zone hint with 1 unready endpoint and 1 unknown endpoint", slice("s", "zone-a+>zone-a", "zone-a->zone-a", "zone-a?>zone-a"),
			map[string]int{"zone-a": 3}, map[string]int{"zone-a": 1}, map[string]int{"zone-a": 1}},
		{"multiple zone hints", slice("s", "zone-a+>zone-a", "zone-a+>zone-b", "zone-b+>zone-b"),
			map[string]int{"zone-a": 3, "zone-b": 3, "zone-c": 3}, map[string]int{"zone-a": 1, "zone-b": 1, "zone-c": 1}, map[string]int{"zone-a": 1, "zone-b": 2}},
		{"invalid by zones that no longer requires any allocations", slice("s", "zone-a+>zone-non-existent"),
			map[string]int{"zone-a": 3}, map[string]int{"zone-a": 1, "zone-b": 1, "zone-c": 1}, nil},
		{"invalid by endpoints with nil hints", slice("s", "zone-a+"), map[string]int{"zone-a": 3}, map[string]int{}, nil},
		{"invalid by endpoint with no hints", slice("s", "zone-a+>"), map[string]int{"zone-a": 3}, map[string]int{}, nil},
		{"invalid by hints that would make minimum allocations impossible", slice("s", "zone-a+>zone-a", "zone-a+>zone-a"),
			map[string]int{"zone-a": 2}, map[string]int{"zone-a": 1}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var names []string
			for z := range tc.maximum {
				names = append(names, z)
			}
			slices.Sort(names)
			tbl := zoneTable{names: names, known: len(names), hints: make([]*Hints, len(names))}
			allocated := make([]int, len(names))
			for i, z := range names {
				allocated[i] = tc.allocated[z] // upstream's extra zones (no allocation) play no part
			}
			before := slices.Clone(allocated)
			orig := render([]*Slice{tc.slice})
			si := &SliceInfo{Unchanged: []*Slice{tc.slice}}
			keepValidUnchanged(si, &tbl, func(i int) int { return tc.maximum[names[i]] }, allocated)
			var got map[string]int
			switch {
			case len(si.Unchanged) == 1 && len(si.ToUpdate) == 0:
				got = map[string]int{}
				for i := range names {
					if d := allocated[i] - before[i]; d != 0 {
						got[names[i]] = d
					}
				}
			case len(si.Unchanged) == 0 && len(si.ToUpdate) == 1:
				if !slices.Equal(allocated, before) {
					t.Errorf("allocated changed by an invalid slice: %v, was %v", allocated, before)
				}
			default:
				t.Fatalf("slice neither kept nor moved: Unchanged %d, ToUpdate %d", len(si.Unchanged), len(si.ToUpdate))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("hints by zone (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(orig, render([]*Slice{tc.slice})); diff != "" {
				t.Errorf("the unchanged slice was modified (-before +after):\n%s", diff)
			}
		})
	}
}

// TestReadyEndpointsUpstreamCases reproduces all 5 cases of
// Test_getTotalReadyEndpoints of k8s.io/endpointslice v0.37.2
// topologycache: only Ready=true counts, over all three lists.
func TestReadyEndpointsUpstreamCases(t *testing.T) {
	withN := func(ready, unready int) *Slice {
		var specs []string
		for i := 0; i < ready; i++ {
			specs = append(specs, "z+")
		}
		for i := 0; i < unready; i++ {
			specs = append(specs, "z-")
		}
		return slice("s", specs...)
	}
	tests := []struct {
		name             string
		si               SliceInfo
		wantReady, total int
	}{
		{"empty", SliceInfo{}, 0, 0},
		{"empty slice", SliceInfo{ToCreate: []*Slice{withN(0, 0)}}, 0, 0},
		{"multiple slices", SliceInfo{ToCreate: []*Slice{withN(15, 0), withN(8, 0)}}, 23, 23},
		{"slices for all", SliceInfo{ToCreate: []*Slice{withN(15, 0), withN(8, 0)}, ToUpdate: []*Slice{withN(2, 0)},
			Unchanged: []*Slice{withN(100, 0), withN(90, 0)}}, 215, 215},
		{"slices for all with some unready", SliceInfo{ToCreate: []*Slice{withN(15, 3), withN(5, 4)}, ToUpdate: []*Slice{withN(3, 8)},
			Unchanged: []*Slice{withN(98, 2), withN(90, 6)}}, 211, 234},
	}
	for _, tc := range tests {
		total := 0
		for _, list := range [][]*Slice{tc.si.ToCreate, tc.si.ToUpdate, tc.si.Unchanged} {
			for _, s := range list {
				total += len(s.Endpoints)
			}
		}
		if total != tc.total {
			t.Errorf("%s: the helper built %d endpoints, want %d", tc.name, total, tc.total)
		}
		if got := tc.si.readyEndpoints(); got != tc.wantReady {
			t.Errorf("%s: readyEndpoints() = %d, want %d", tc.name, got, tc.wantReady)
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

// TestNewCapacity reproduces all 9 cases of TestSetNodes of
// k8s.io/endpointslice v0.37.2 topologycache (sufficiency, ratios and CPU
// by zone), and adds nodes without a zone or CPU.
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
	// Upstream's expectedCPUByZone, for the cases with sufficient info.
	cpu := map[string]map[string]int64{
		"2 zones": {"zone-a": 1000, "zone-b": 1000},
		"2 zones, unready node in 1, ready node in 2":       {"zone-a": 1000, "zone-b": 1000},
		"2 zones, control plane node in 1, ready node in 2": {"zone-a": 1000, "zone-b": 1000},
		"3 zones, 4 nodes in 1, 2 nodes in 1, 1 node in 1":  {"zone-a": 5000, "zone-b": 4500, "zone-c": 500},
	}
	for _, tc := range tests {
		c := NewCapacity(tc.nodes)
		var got map[string]float64
		var gotCPU map[string]int64
		if c.Sufficient() {
			got, gotCPU = map[string]float64{}, map[string]int64{}
			for _, z := range c.Zones() {
				got[z] = c.Ratio(z)
				gotCPU[z] = c.MilliCPU(z)
			}
		}
		if diff := cmp.Diff(tc.ratios, got); diff != "" {
			t.Errorf("%s: ratios (-want +got):\n%s", tc.name, diff)
		}
		if want, ok := cpu[tc.name]; ok {
			if diff := cmp.Diff(want, gotCPU); diff != "" {
				t.Errorf("%s: milli-CPU by zone (-want +got):\n%s", tc.name, diff)
			}
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
