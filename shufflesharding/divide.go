package shufflesharding

import "math/bits"

// reciprocal divides 64-bit values by a fixed divisor d ≥ 2 with one
// multiplication instead of a hardware division:
//
//	n / d = (n + mulhi(magic, n)) >> (shift+1)
//
// where 2^64 + magic is the 65-bit fixed-point reciprocal 2^(65+shift)/d,
// rounded up, and the sum is formed without overflow as
// ((n - t) >> 1) + t. The rounding error of a reciprocal rounded up to
// 64+shift+1 fraction bits is below 2^-64 relative, too small to move any
// 64-bit quotient; the tests check it against the hardware.
//
// One form for every divisor keeps quo free of branches: a power of two 2^l
// is magic 0 and shift l-1, and reciprocals that would fit in 64 bits are
// rewritten in the 65-bit form. The dealer uses it where the dividend is a
// whole 64-bit hash; narrowReciprocal, one instruction cheaper, takes over
// once the hash is reduced below 2^60.
type reciprocal struct {
	d     uint64
	magic uint64
	shift uint8
}

func newReciprocal(d uint64) reciprocal {
	if d < 2 {
		panic("shufflesharding: reciprocal of a divisor below 2")
	}
	l := uint8(63 - bits.LeadingZeros64(d)) // floor(log2 d) ≥ 1
	if d&(d-1) == 0 {
		return reciprocal{d: d, magic: 0, shift: l - 1}
	}
	// m = floor(2^(64+l) / d) and r = 2^(64+l) mod d; 2^63 ≤ m < 2^64.
	m, r := bits.Div64(uint64(1)<<l, 0, d)
	if e := d - r; e < uint64(1)<<l {
		// ceil(2^(64+l)/d) = m+1 overshoots 2^(64+l)/d by e/d < 2^l/d,
		// which is exact for all 64-bit n; doubling it gives the 65-bit
		// reciprocal of 2^(65+l)/d with the same effect.
		return reciprocal{d: d, magic: 2 * (m + 1), shift: l} // 2(m+1) - 2^64, mod 2^64
	}
	// Otherwise round up 2^(65+l)/d itself: double m and r, carrying the
	// remainder's overflow into the quotient.
	m2 := 2 * m // drops the 2^64 bit, which the formula adds back as n
	if r2 := r + r; r2 >= d || r2 < r {
		m2++
	}
	return reciprocal{d: d, magic: m2 + 1, shift: l}
}

// quo returns n / d.
func (v reciprocal) quo(n uint64) uint64 {
	t, _ := bits.Mul64(v.magic, n)
	return (((n - t) >> 1) + t) >> (v.shift & 63) // & 63: a bare shift, no range check
}

// narrowReciprocal divides values below 2^63 by a fixed divisor d ≥ 2:
//
//	n / d = mulhi(magic, n) >> shift
//
// with magic = ceil(2^(64+shift)/d) and shift = floor(log2 d), so that magic
// fits in 64 bits (a power of two 2^l uses magic 2^63 and shift l-1). Its
// rounding error e = magic·d - 2^(64+shift) is below d ≤ 2^(shift+1), and
// the quotient is exact whenever e·n < 2^(64+shift), which n < 2^63 ensures.
type narrowReciprocal struct {
	magic uint64
	shift uint8
}

func newNarrowReciprocal(d uint64) narrowReciprocal {
	if d < 2 {
		panic("shufflesharding: reciprocal of a divisor below 2")
	}
	l := uint8(63 - bits.LeadingZeros64(d))
	if d&(d-1) == 0 {
		return narrowReciprocal{magic: 1 << 63, shift: l - 1}
	}
	m, _ := bits.Div64(uint64(1)<<l, 0, d) // not exact: d is no power of two
	return narrowReciprocal{magic: m + 1, shift: l}
}

// quo returns n / d for n < 2^63.
func (v narrowReciprocal) quo(n uint64) uint64 {
	t, _ := bits.Mul64(v.magic, n)
	return t >> (v.shift & 63)
}
