package seats

import (
	"math"
	"testing"
)

// FuzzMaxSeats: MaxSeats never panics, is at least 1, and within the API's
// ranges (int32 nominal limit and hand size) is upstream's formula.
func FuzzMaxSeats(f *testing.F) {
	for _, s := range [][2]int{{10, 1 << 32}, {600, 6}, {0, 0}, {-5, -1}, {1 << 31, 3}, {245, 1<<32 + 1}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, nominal, hand int) {
		got := MaxSeats(nominal, hand)
		if got < 1 {
			t.Fatalf("MaxSeats(%d, %d) = %d, want at least 1", nominal, hand, got)
		}
		if nominal < 0 || nominal > math.MaxInt32 || hand < 1 || hand > math.MaxInt32 {
			return
		}
		want := int(math.Max(1, math.Min(math.Ceil(float64(nominal)*0.15), float64(int32(nominal)/int32(hand)))))
		if got != want {
			t.Fatalf("MaxSeats(%d, %d) = %d, want %d", nominal, hand, got, want)
		}
	})
}
