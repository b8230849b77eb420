package shufflesharding

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// interesting returns dividends near the edges where a reciprocal that is
// off by one would first show.
func interestingDividends(d uint64) []uint64 {
	ns := []uint64{0, 1, 2, d - 1, d, d + 1, 2*d - 1, 2 * d, math.MaxUint64, math.MaxUint64 - 1, 1 << 63, 1<<63 - 1, 1<<63 + 1}
	top := math.MaxUint64 / d * d
	ns = append(ns, top, top-1, top-d, top-d+1)
	return ns
}

func TestReciprocalMatchesHardware(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	check := func(d, n uint64) {
		v := newReciprocal(d)
		if got, want := v.quo(n), n/d; got != want {
			t.Fatalf("newReciprocal(%d).quo(%d) = %d, want %d", d, n, got, want)
		}
	}
	var ds []uint64
	for d := uint64(2); d <= 5000; d++ {
		ds = append(ds, d)
	}
	for k := 0; k < 64; k++ {
		ds = append(ds, 1<<k, 1<<k+1, (1<<k)-1, (1<<k)*3/2)
	}
	ds = append(ds, 1<<26, 1<<26-1, 1<<26-14, 641, 274177, 6700417, 67280421310721, math.MaxUint64, math.MaxUint64-1)
	for _, d := range ds {
		if d < 2 {
			continue
		}
		for _, n := range interestingDividends(d) {
			check(d, n)
		}
		for i := 0; i < 200; i++ {
			check(d, r.Uint64())
			check(d, r.Uint64()>>r.IntN(64))
		}
	}
}

func TestReciprocalProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.Uint64Min(2).Draw(t, "d")
		n := rapid.Uint64().Draw(t, "n")
		v := newReciprocal(d)
		if got, want := v.quo(n), n/d; got != want {
			t.Fatalf("newReciprocal(%d).quo(%d) = %d, want %d", d, n, got, want)
		}
	})
}

func TestNarrowReciprocalMatchesHardware(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	check := func(d, n uint64) {
		if got, want := newNarrowReciprocal(d).quo(n), n/d; got != want {
			t.Fatalf("newNarrowReciprocal(%d).quo(%d) = %d, want %d", d, n, got, want)
		}
	}
	const limit = 1<<63 - 1
	var ds []uint64
	for d := uint64(2); d <= 5000; d++ {
		ds = append(ds, d)
	}
	for k := 1; k < 63; k++ {
		ds = append(ds, 1<<k, 1<<k+1, (1<<k)-1, (1<<k)*3/2)
	}
	ds = append(ds, 1<<63, 1<<63+1, math.MaxUint64, 128*127*126*125*124*123*122*121)
	for _, d := range ds {
		if d < 2 {
			continue
		}
		for _, n := range interestingDividends(d) {
			if n <= limit {
				check(d, n)
			}
		}
		top := limit / d * d
		for _, n := range []uint64{limit, top, top - 1, top + d - 1} {
			if n <= limit {
				check(d, n)
			}
		}
		for i := 0; i < 200; i++ {
			check(d, r.Uint64()>>1)
			check(d, r.Uint64()>>(1+r.IntN(63)))
		}
	}
}

func TestNarrowReciprocalProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.Uint64Min(2).Draw(t, "d")
		n := rapid.Uint64Max(1<<63-1).Draw(t, "n")
		if got, want := newNarrowReciprocal(d).quo(n), n/d; got != want {
			t.Fatalf("newNarrowReciprocal(%d).quo(%d) = %d, want %d", d, n, got, want)
		}
	})
}
