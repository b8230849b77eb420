package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMinCrossCases(t *testing.T) {
	equal := capacityOf("a=1000", "b=1000", "c=1000")
	tests := []struct {
		name       string
		c          Capacity
		si         SliceInfo
		opts       Options
		wantCreate []string
		wantUpdate []string
		wantKept   []string
	}{{
		name: "18 over equal zones: the exact minimum is 5, upstream's float says 6",
		c:    equal,
		si:   SliceInfo{ToCreate: []*Slice{slice("c", "a+", "a+", "a+", "a+", "a+", "a+", "a+", "b+", "b+", "b+", "b+", "b+", "b+", "c+", "c+", "c+", "c+", "c+")}},
		// No endpoint moves: zone c's 5 keep its load at 6/5 of an even share.
		wantCreate: []string{"c: a+>a a+>a a+>a a+>a a+>a a+>a a+>a b+>b b+>b b+>b b+>b b+>b b+>b c+>c c+>c c+>c c+>c c+>c"},
	}, {
		name: "moves only the shortfall, from the zone with most to spare, zoneless endpoints first",
		c:    equal,
		si:   SliceInfo{ToCreate: []*Slice{slice("c", "a+", "a+", "a+", "a+", "a+", "a+", "b+", "b+", "b+", "b+", "b+", "+", "c+", "c+")}},
		// N=14: minimum ceil(14/3.6) = 4 each; c is 2 short: the zoneless
		// endpoint and one of a's (6, the most to spare).
		wantCreate: []string{"c: a+>c a+>a a+>a a+>a a+>a a+>a b+>b b+>b b+>b b+>b b+>b +>c c+>c c+>c"},
	}, {
		name: "unchanged own-zone slices stay; a needed cross-zone hint stays; a stale one is rewritten",
		c:    equal,
		si: SliceInfo{
			ToCreate:  []*Slice{slice("new", "a+", "a+", "a-")},
			Unchanged: []*Slice{slice("own", "a+>a", "a+>a", "b+>b", "b+>b", "c+>c"), slice("needed", "a+>c", "c+>c", "c+>c"), slice("stale", "b+>a", "b+>b")},
		},
		// N=12: 4 each; located a 5, b 4, c 3: c needs one from elsewhere,
		// which "needed" provides; "stale" sends one of b's to a, which a
		// does not need.
		wantCreate: []string{"new: a+>a a+>a a-"},
		wantUpdate: []string{"stale: b+>b b+>b"},
		wantKept:   []string{"own: a+>a a+>a b+>b b+>b c+>c", "needed: a+>c c+>c c+>c"},
	}, {
		name: "hysteresis keeps 11 endpoints over equal zones on single-zone hints",
		c:    equal,
		si:   SliceInfo{ToCreate: []*Slice{slice("c", "a+", "a+", "a+", "a+", "b+", "b+", "b+", "b+", "c+", "c+", "c+")}},
		opts: Options{HadHints: true, Hysteresis: 0.1},
		// Within 30%: c's 3 endpoints carry 11/9 = 1.22 of an even share.
		wantCreate: []string{"c: a+>a a+>a a+>a a+>a b+>b b+>b b+>b b+>b c+>c c+>c c+>c"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			si := tc.si
			opts := tc.opts
			opts.Allocator = AllocatorMinCrossZone
			r := AddHints(tc.c, &si, opts)
			if !r.Enabled() {
				t.Fatalf("hints off: %s", r.Fallback.Message())
			}
			got := [][]string{render(si.ToCreate), render(si.ToUpdate), render(si.Unchanged)}
			want := [][]string{tc.wantCreate, tc.wantUpdate, tc.wantKept}
			if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
				t.Errorf("creates, updates, unchanged (-want +got):\n%s", diff)
			}
		})
	}
}

var cmpEmpty = cmp.Transformer("nilToEmpty", func(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
})

// TestMinCrossGroupsElevenEndpoints is kubernetes#122437: upstream turns
// hints off; min-cross groups two zones.
func TestMinCrossGroupsElevenEndpoints(t *testing.T) {
	c := capacityOf("a=1000", "b=1000", "c=1000")
	si := SliceInfo{ToCreate: []*Slice{slice("c", "a+", "a+", "a+", "a+", "b+", "b+", "b+", "b+", "c+", "c+", "c+")}}
	if r := AddHints(c, cloneInfo(&si), Options{}); r.Enabled() {
		t.Fatalf("upstream allocator kept hints for 11 endpoints")
	}
	r := AddHints(c, &si, Options{Allocator: AllocatorMinCrossZone})
	if diff := cmp.Diff(map[string]int{"a": 7, "b": 4, "c": 7}, r.HintsByZone); diff != "" {
		t.Errorf("HintsByZone (-want +got):\n%s", diff)
	}
	q := Evaluate(c, si.ToCreate)
	if q.MaxOverload > OverloadThreshold || q.CrossZone > 0.34 || !q.Hinted {
		t.Errorf("Evaluate = %+v, want overload <= 0.2 and cross-zone 1/3", q)
	}
}

func TestEvaluateNoHints(t *testing.T) {
	c := capacityOf("a=1000", "b=3000")
	q := Evaluate(c, []*Slice{slice("s", "a+", "b+", "b+", "b+")})
	// Without hints traffic spreads evenly: zone a's quarter goes 3/4
	// elsewhere, zone b's three quarters go 1/4 elsewhere.
	if want := 0.25*0.75 + 0.75*0.25; q.CrossZone != want || q.MaxOverload != 0 || q.Hinted {
		t.Errorf("Evaluate = %+v, want cross-zone %v, no overload, not hinted", q, want)
	}
}

// Hysteresis is a margin for a Service that already has hints: without
// HadHints it changes nothing, so the 11 endpoints are grouped exactly as
// with no hysteresis, not kept on single-zone hints.
func TestHysteresisNeedsHadHints(t *testing.T) {
	c := capacityOf("a=1000", "b=1000", "c=1000")
	eleven := func() *SliceInfo {
		return &SliceInfo{ToCreate: []*Slice{slice("c", "a+", "a+", "a+", "a+", "b+", "b+", "b+", "b+", "c+", "c+", "c+")}}
	}
	run := func(opts Options) (map[string]int, []string) {
		si := eleven()
		opts.Allocator = AllocatorMinCrossZone
		r := AddHints(c, si, opts)
		return r.HintsByZone, render(si.ToCreate)
	}
	wantZones, wantSlices := run(Options{})
	gotZones, gotSlices := run(Options{Hysteresis: 0.1})
	if diff := cmp.Diff(wantZones, gotZones); diff != "" {
		t.Errorf("AddHints(Hysteresis 0.1, no HadHints) HintsByZone differs from no hysteresis (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSlices, gotSlices); diff != "" {
		t.Errorf("AddHints(Hysteresis 0.1, no HadHints) slices differ from no hysteresis (-want +got):\n%s", diff)
	}
	if stickyZones, _ := run(Options{HadHints: true, Hysteresis: 0.1}); cmp.Equal(stickyZones, wantZones) {
		t.Errorf("with HadHints the hysteresis changed nothing (%v): the case does not exercise it", stickyZones)
	}
}
