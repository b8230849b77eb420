package shufflesharding

import "math/bits"

// divisor divides 64-bit values by a fixed divisor d ≥ 1 with one
// multiplication instead of a hardware division.
//
// The dealer divides by the same handSize divisors (deckSize, deckSize-1, …)
// on every deal; a 64-bit DIV costs tens of cycles, a 64×64→128 multiply a
// few. The reciprocal is the rounded-up fixed-point value of 2^(64+l)/d (or
// 2^(65+l)/d when the shorter one is not precise enough, which needs a 65-bit
// multiplier whose top bit is handled by the add-and-halve step in quo).
// Either way the quotient is exact for every 64-bit dividend; the tests check
// it against the hardware.
type divisor struct {
	d     uint64
	magic uint64 // low 64 bits of the reciprocal; 0 for powers of two
	shift uint8  // final right shift
	wide  bool   // the reciprocal has 65 bits
}

func newDivisor(d uint64) divisor {
	if d == 0 {
		panic("shufflesharding: division by zero")
	}
	l := uint8(63 - bits.LeadingZeros64(d)) // floor(log2 d)
	if d&(d-1) == 0 {
		return divisor{d: d, shift: l}
	}
	// m = floor(2^(64+l) / d), r = 2^(64+l) mod d.
	m, r := bits.Div64(uint64(1)<<l, 0, d)
	if e := d - r; e < uint64(1)<<l {
		// ceil(2^(64+l)/d) = m+1 overshoots by e < 2^l: exact for all n.
		return divisor{d: d, magic: m + 1, shift: l}
	}
	// Use 2^(65+l)/d instead: double m and r, carry the remainder's overflow.
	m += m
	if r2 := r + r; r2 >= d || r2 < r {
		m++
	}
	return divisor{d: d, magic: m + 1, shift: l, wide: true}
}

// quo returns n / d.
func (v *divisor) quo(n uint64) uint64 {
	if v.magic == 0 {
		return n >> v.shift
	}
	t, _ := bits.Mul64(v.magic, n)
	if !v.wide {
		return t >> v.shift
	}
	// floor((n + t) / 2^(l+1)) without overflowing n + t.
	return (((n - t) >> 1) + t) >> v.shift
}
