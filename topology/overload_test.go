package topology

import (
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

func TestOverloaded(t *testing.T) {
	equal3 := capacityOf("a=1000", "b=1000", "c=1000")
	tests := []struct {
		name  string
		c     Capacity
		hints map[string]int
		want  bool
	}{
		{"no hints", equal3, nil, false},
		{"no hints, insufficient capacity", Capacity{}, map[string]int{}, false},
		{"insufficient capacity", Capacity{}, map[string]int{"a": 1}, true},
		{"one zone left", capacityOf("a=1000"), map[string]int{"a": 3}, true},
		{"even", equal3, map[string]int{"a": 2, "b": 2, "c": 2}, false},
		// 6 × 1/3 / 1.2 = 1.67: at least 2 each.
		{"one zone below its minimum", equal3, map[string]int{"a": 3, "b": 2, "c": 1}, true},
		{"a zone with no hints", equal3, map[string]int{"a": 3, "b": 3}, true},
		// 10 × 1/3 / 1.2 = 2.78: 3 each suffice.
		{"uneven within the threshold", equal3, map[string]int{"a": 4, "b": 3, "c": 3}, false},
		// A new zone after a node change: its share is 0.25 of 12 / 1.2 = 2.5.
		{"a zone added", capacityOf("a=1000", "b=1000", "c=1000", "d=1000"), map[string]int{"a": 4, "b": 4, "c": 4}, true},
		// A zone gone: its hints still count in the total (12 × 0.5 / 1.2 = 5).
		{"a zone removed", capacityOf("a=1000", "b=1000"), map[string]int{"a": 4, "b": 4, "c": 4}, true},
		{"a zone removed, still enough", capacityOf("a=1000", "b=1000"), map[string]int{"a": 5, "b": 5, "c": 2}, false},
		// The CPU shifts: a has 60%, so it needs ceil(10 × 0.6 / 1.2) = 5.
		{"capacity shifted", capacityOf("a=6000", "b=4000"), map[string]int{"a": 4, "b": 6}, true},
		{"capacity shifted, still enough", capacityOf("a=6000", "b=4000"), map[string]int{"a": 5, "b": 5}, false},
	}
	for _, tc := range tests {
		if got := tc.c.Overloaded(tc.hints); got != tc.want {
			t.Errorf("%s: Overloaded(%v) = %v, want %v", tc.name, tc.hints, got, tc.want)
		}
	}
}

// TestPropertyOverloadedMatchesMinimums checks Overloaded against the
// allocation's own minimums: for hints that sum to n over the capacity's
// zones, it is true exactly when some zone has fewer than the Minimum
// Allocate(n) gives it (whenever Allocate(n) succeeds).
func TestPropertyOverloadedMatchesMinimums(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nz := rapid.IntRange(2, 5).Draw(t, "zones")
		pairs := make([]string, nz)
		names := make([]string, nz)
		for i := range pairs {
			names[i] = string(rune('a' + i))
			pairs[i] = names[i] + "=" + strconv.Itoa(rapid.IntRange(1, 8).Draw(t, "cpu")*500)
		}
		c := capacityOf(pairs...)
		hints := map[string]int{}
		n := 0
		for _, z := range names {
			k := rapid.IntRange(0, 20).Draw(t, "hints")
			if k > 0 {
				hints[z] = k
				n += k
			}
		}
		alloc, fb := c.Allocate(n)
		if n == 0 || fb.Reason != NoReason {
			return
		}
		want := false
		for _, a := range alloc {
			if hints[a.Zone] < a.Minimum {
				want = true
			}
		}
		if got := c.Overloaded(hints); got != want {
			t.Fatalf("Overloaded(%v) = %v, want %v (allocation %+v)", hints, got, want, alloc)
		}
	})
}
