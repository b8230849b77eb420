package topology

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

var zoneNames = []string{"zone-a", "zone-b", "zone-c", "zone-d", "zone-e"}

// genCluster draws a capacity and a plan: 2-5 zones, slices to create,
// update and leave unchanged, endpoints mostly in capacity zones (sometimes
// in an unknown zone or none when allowZoneless), ready or not, and
// existing single-zone hints (sometimes stale, missing or for an unknown
// zone) on unchanged slices.
func genCluster(t *rapid.T, allowZoneless bool) (Capacity, *SliceInfo) {
	nz := rapid.IntRange(2, len(zoneNames)).Draw(t, "zones")
	cpu := map[string]int64{}
	for _, z := range zoneNames[:nz] {
		cpu[z] = rapid.Int64Range(1, 16).Draw(t, "cpu") * 500
	}
	c, err := CapacityFromZones(cpu)
	if err != nil {
		t.Fatal(err)
	}
	si := &SliceInfo{AddressType: "IPv4"}
	addr, slices := 0, 0
	conds := []Condition{True, True, True, False}
	if rapid.Bool().Draw(t, "withUnsetReady") {
		conds = append(conds, Unset)
	}
	mkSlice := func(kind string, existing bool) *Slice {
		slices++
		s := &Slice{Name: fmt.Sprintf("%s-%d", kind, slices)}
		n := rapid.IntRange(0, 12).Draw(t, "endpoints")
		for range n {
			addr++
			e := Endpoint{Addresses: []string{fmt.Sprintf("10.0.%d.%d", addr/256, addr%256)}}
			switch k := rapid.IntRange(0, 19).Draw(t, "zoneKind"); {
			case k == 0 && allowZoneless:
				e.Zone = ""
			case k == 1:
				e.Zone = "zone-x" // a zone with no counted nodes
			default:
				e.Zone = zoneNames[rapid.IntRange(0, nz-1).Draw(t, "zone")]
			}
			e.Conditions.Ready = conds[rapid.IntRange(0, len(conds)-1).Draw(t, "ready")]
			if existing {
				switch k := rapid.IntRange(0, 9).Draw(t, "hint"); {
				case k < 6:
					e.Hints = &Hints{ForZones: []string{e.Zone}}
				case k < 8:
					e.Hints = &Hints{ForZones: []string{zoneNames[rapid.IntRange(0, nz-1).Draw(t, "hintZone")]}}
				case k == 8:
					e.Hints = nil
				default:
					e.Hints = &Hints{ForZones: []string{"zone-y"}}
				}
			}
			s.Endpoints = append(s.Endpoints, e)
		}
		return s
	}
	for range rapid.IntRange(0, 4).Draw(t, "creates") {
		si.ToCreate = append(si.ToCreate, mkSlice("create", false))
	}
	for range rapid.IntRange(0, 3).Draw(t, "updates") {
		si.ToUpdate = append(si.ToUpdate, mkSlice("update", rapid.Bool().Draw(t, "updateHinted")))
	}
	for range rapid.IntRange(0, 4).Draw(t, "unchanged") {
		si.Unchanged = append(si.Unchanged, mkSlice("unchanged", true))
	}
	return c, si
}

func allSlices(si *SliceInfo) []*Slice {
	var out []*Slice
	out = append(out, si.ToCreate...)
	out = append(out, si.ToUpdate...)
	return append(out, si.Unchanged...)
}

// checkPlanShape checks that the plan still holds every slice exactly once
// and that the original unchanged slices were not modified.
func checkPlanShape(t *rapid.T, before []string, unchanged []*Slice, beforeUnchanged []string, si *SliceInfo) {
	names := map[string]int{}
	for _, s := range allSlices(si) {
		names[s.Name]++
	}
	for _, line := range before {
		name := line[:indexColon(line)]
		if names[name] != 1 {
			t.Fatalf("slice %s appears %d times in the plan", name, names[name])
		}
	}
	if got := render(unchanged); fmt.Sprint(got) != fmt.Sprint(beforeUnchanged) {
		t.Fatalf("an unchanged slice was modified:\nbefore %v\nafter  %v", beforeUnchanged, got)
	}
}

func indexColon(s string) int {
	for i := range s {
		if s[i] == ':' {
			return i
		}
	}
	return len(s)
}

// TestPropertyAddHints: with hints on, every ready endpoint of the plan has
// exactly one zone hint; the plan keeps its slices; unchanged slices are
// never modified; the same input gives the same plan; and hint counts per
// zone match the slices. With AllocatorMinCrossZone, no endpoint's load
// exceeds an even share by more than the threshold, and hints are on
// whenever upstream's are.
func TestPropertyAddHints(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		for _, alloc := range []Allocator{AllocatorUpstream, AllocatorMinCrossZone} {
			c, si := genCluster(t, alloc == AllocatorMinCrossZone)
			before := render(allSlices(si))
			unchanged := append([]*Slice(nil), si.Unchanged...)
			beforeUnchanged := render(unchanged)
			c2, si2 := c, cloneInfo(si)
			r := AddHints(c, si, Options{Allocator: alloc})
			r2 := AddHints(c2, si2, Options{Allocator: alloc})
			if fmt.Sprint(render(allSlices(si))) != fmt.Sprint(render(allSlices(si2))) || fmt.Sprint(r) != fmt.Sprint(r2) {
				t.Fatalf("allocator %d: not deterministic", alloc)
			}
			checkPlanShape(t, before, unchanged, beforeUnchanged, si)
			if !r.Enabled() {
				for _, s := range allSlices(si) {
					if anyHints(s) {
						t.Fatalf("allocator %d: hints off (%s) but slice %s has hints", alloc, r.Fallback.Message(), s.Name)
					}
				}
				continue
			}
			if got := hintsByZone(si); fmt.Sprint(got) != fmt.Sprint(r.HintsByZone) {
				t.Fatalf("allocator %d: HintsByZone %v, slices hold %v", alloc, r.HintsByZone, got)
			}
			// Every ready endpoint has exactly one zone hint; min-cross may
			// hint a group of zones instead, only when no single-zone
			// assignment fits.
			singleFits := fits(minimums(c, si.readyEndpoints(), OverloadThreshold), si.readyEndpoints())
			for _, s := range allSlices(si) {
				for _, e := range s.Endpoints {
					if !isReady(&e) {
						continue
					}
					if e.Hints == nil || len(e.Hints.ForZones) == 0 || len(e.Hints.ForNodes) != 0 {
						t.Fatalf("allocator %d: ready endpoint %s of %s has hints %v", alloc, address(&e), s.Name, e.Hints)
					}
					if len(e.Hints.ForZones) > 1 && (alloc == AllocatorUpstream || singleFits) {
						t.Fatalf("allocator %d: ready endpoint %s of %s is hinted for several zones %v", alloc, address(&e), s.Name, e.Hints)
					}
				}
			}
			// Evaluate reads conditions as kube-proxy does, which counts an
			// unset Ready as ready where the controller does not; the bound
			// holds for the endpoints the controller sees as ready.
			if alloc == AllocatorMinCrossZone && !anyUnsetReady(si) {
				if q := Evaluate(c, allSlices(si)); q.MaxOverload > OverloadThreshold+1e-9 || !q.Hinted {
					t.Fatalf("min-cross: overload %.4f > %.2f (hinted %v)\n%v", q.MaxOverload, OverloadThreshold, q.Hinted, render(allSlices(si)))
				}
			}
		}
	})
}

func cloneInfo(si *SliceInfo) *SliceInfo {
	cp := func(list []*Slice) []*Slice {
		out := make([]*Slice, len(list))
		for i, s := range list {
			out[i] = cloneSlice(s)
		}
		return out
	}
	return &SliceInfo{AddressType: si.AddressType, ToCreate: cp(si.ToCreate), ToUpdate: cp(si.ToUpdate), Unchanged: cp(si.Unchanged)}
}

// TestPropertyMinCrossBeatsUpstream: from a plan with no existing slices,
// min-cross is on whenever upstream is, and sends no more endpoints to
// another zone than upstream does whenever upstream stays within the
// overload threshold.
func TestPropertyMinCrossBeatsUpstream(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, si := genCluster(t, false)
		si.ToCreate = append(si.ToCreate, si.ToUpdate...)
		si.ToUpdate, si.Unchanged = nil, nil
		for _, s := range si.ToCreate {
			for i := range s.Endpoints {
				s.Endpoints[i].Hints = nil
			}
		}
		up, ours := cloneInfo(si), cloneInfo(si)
		ru := AddHints(c, up, Options{})
		ro := AddHints(c, ours, Options{Allocator: AllocatorMinCrossZone})
		if ru.Enabled() && !ro.Enabled() {
			t.Fatalf("upstream on, min-cross off: %s", ro.Fallback.Message())
		}
		if !ru.Enabled() {
			return
		}
		qu := Evaluate(c, up.ToCreate)
		if qu.MaxOverload > OverloadThreshold+1e-9 || !qu.Hinted {
			return
		}
		if cu, co := crossCount(c, up), crossCount(c, ours); co > cu {
			t.Fatalf("min-cross moves %d endpoints across zones, upstream %d\nupstream %v\nours     %v", co, cu, render(up.ToCreate), render(ours.ToCreate))
		}
	})
}

// crossCount counts ready endpoints of capacity zones hinted for another
// zone.
func crossCount(c Capacity, si *SliceInfo) int {
	n := 0
	for _, s := range allSlices(si) {
		for _, e := range s.Endpoints {
			if isReady(&e) && c.index(e.Zone) >= 0 && e.Hints != nil && len(e.Hints.ForZones) > 0 && e.Hints.ForZones[0] != e.Zone {
				n++
			}
		}
	}
	return n
}

// TestPropertyRemoveHints: removal leaves no hint behind, keeps every
// endpoint, and never modifies an unchanged slice.
func TestPropertyRemoveHints(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		_, si := genCluster(t, true)
		for _, s := range si.ToCreate {
			for i := range s.Endpoints {
				s.Endpoints[i].Hints = &Hints{ForZones: []string{"zone-a"}}
			}
		}
		before := render(allSlices(si))
		unchanged := append([]*Slice(nil), si.Unchanged...)
		beforeUnchanged := render(unchanged)
		endpoints := 0
		for _, s := range allSlices(si) {
			endpoints += len(s.Endpoints)
		}
		RemoveHints(si)
		checkPlanShape(t, before, unchanged, beforeUnchanged, si)
		after := 0
		for _, s := range allSlices(si) {
			after += len(s.Endpoints)
			if anyHints(s) {
				t.Fatalf("slice %s still has hints: %v", s.Name, render([]*Slice{s}))
			}
		}
		if after != endpoints {
			t.Fatalf("%d endpoints before, %d after", endpoints, after)
		}
	})
}

// TestPropertyZoneRouting checks Envoy's zone-aware routing: each row is a
// probability distribution, every upstream zone receives exactly its share
// of all traffic, and the local fraction is Σ min(downstream, upstream).
func TestPropertyZoneRouting(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "zones")
		d := make([]float64, n)
		u := make([]float64, n)
		for i := range n {
			d[i] = float64(rapid.IntRange(0, 100).Draw(t, "down"))
			u[i] = float64(rapid.IntRange(0, 100).Draw(t, "up"))
		}
		d[0]++
		u[rapid.IntRange(0, n-1).Draw(t, "nonzero")]++
		dn, _ := normalise("d", d)
		un, _ := normalise("u", u)
		received := make([]float64, n)
		local, bound := 0.0, 0.0
		for l := range n {
			p, err := ZoneRouting(l, d, u)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for z, x := range p {
				if x < 0 {
					t.Fatalf("negative probability %v", p)
				}
				sum += x
				received[z] += dn[l] * x
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Fatalf("zone %d: probabilities sum to %v: %v", l, sum, p)
			}
			local += dn[l] * p[l]
			bound += math.Min(dn[l], un[l])
		}
		for z := range n {
			if math.Abs(received[z]-un[z]) > 1e-9 {
				t.Fatalf("zone %d receives %v of traffic, its upstream share is %v", z, received[z], un[z])
			}
		}
		if math.Abs(local-bound) > 1e-9 {
			t.Fatalf("local fraction %v, maximum %v", local, bound)
		}
	})
}

func TestZoneRoutingErrors(t *testing.T) {
	for _, tc := range []struct {
		local    int
		down, up []float64
	}{
		{0, []float64{1}, []float64{1, 2}},
		{2, []float64{1, 1}, []float64{1, 1}},
		{0, []float64{0, 0}, []float64{1, 1}},
		{0, []float64{1, -1}, []float64{1, 1}},
		{0, []float64{1, math.NaN()}, []float64{1, 1}},
		{0, []float64{1, 1}, []float64{math.Inf(1), 1}},
	} {
		if _, err := ZoneRouting(tc.local, tc.down, tc.up); err == nil {
			t.Errorf("ZoneRouting(%d, %v, %v) = nil error", tc.local, tc.down, tc.up)
		}
	}
}

func anyUnsetReady(si *SliceInfo) bool {
	for _, s := range allSlices(si) {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == Unset {
				return true
			}
		}
	}
	return false
}
