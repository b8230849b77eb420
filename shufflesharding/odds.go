package shufflesharding

import (
	"math"
	"math/big"
	"math/bits"
)

// SquishProbability returns the probability that a given mouse's hand is
// entirely covered by the union of the hands of elephants independent
// elephants, where every hand is a uniformly random set of handSize distinct
// queues out of deckSize. A squished mouse has no queue free of elephant
// traffic. This is the quantity in the Kubernetes API Priority and Fairness
// documentation's "Example Shuffle Sharding Configurations" table.
//
// It returns NaN unless 1 ≤ handSize ≤ deckSize ≤ 1<<26 and elephants ≥ 0.
// With no elephants it is 0; with one it is 1/C(deckSize, handSize).
//
// The result is exact to within float64 rounding (relative error below
// 1e-15): it evaluates the inclusion–exclusion sum
//
//	Σ_{j=0..h} (-1)^j · C(h, j) · (C(n-j, h) / C(n, h))^e
//
// in binary floating point with enough bits that the cancellation between
// terms (at most ≈2^h, against a result no smaller than 1/C(n, h)) cannot
// reach the 53 bits returned. Cost: O(h·log e) multiplications of numbers of
// O(h·log n + log e) bits — microseconds for the configurations APF uses, and
// independent of the number of elephants beyond its logarithm.
func SquishProbability(deckSize, handSize, elephants int) float64 {
	n, h, e := deckSize, handSize, elephants
	if h < 1 || n < h || n > maxDeckSize || e < 0 {
		return math.NaN()
	}
	if e == 0 {
		return 0
	}
	if h == n {
		return 1
	}
	// Bits to carry: the result is at least 1/C(n,h) (one elephant; more only
	// help), the terms are at most C(h, h/2) < 2^h in size, powers to the e
	// lose about log2(e) bits, and 64 bits of margin cover the rest.
	logBinom := 0.0
	for i := 0; i < h; i++ {
		logBinom += math.Log2(float64(n-i)) - math.Log2(float64(i+1))
	}
	prec := uint(math.Ceil(logBinom)) + uint(h) + uint(bits.Len(uint(e))) + 64

	// fallingN = n·(n-1)···(n-h+1), the common denominator of every ratio
	// C(n-j,h)/C(n,h) = (n-j)···(n-j-h+1) / fallingN.
	fallingN := fallingFactorial(n, h)
	den := new(big.Float).SetPrec(prec).SetInt(fallingN)

	sum := new(big.Float).SetPrec(prec)
	binomHJ := big.NewInt(1) // C(h, j)
	ratio := new(big.Float).SetPrec(prec)
	term := new(big.Float).SetPrec(prec)
	for j := 0; j <= h && n-j >= h; j++ {
		if j > 0 {
			binomHJ.Mul(binomHJ, big.NewInt(int64(h-j+1)))
			binomHJ.Quo(binomHJ, big.NewInt(int64(j)))
		}
		ratio.SetInt(fallingFactorial(n-j, h))
		ratio.Quo(ratio, den)
		powFloat(term, ratio, uint64(e))
		term.Mul(term, new(big.Float).SetPrec(prec).SetInt(binomHJ))
		if j%2 == 0 {
			sum.Add(sum, term)
		} else {
			sum.Sub(sum, term)
		}
	}
	p, _ := sum.Float64()
	return p
}

// fallingFactorial returns n·(n-1)···(n-k+1).
func fallingFactorial(n, k int) *big.Int {
	r := big.NewInt(1)
	f := new(big.Int)
	for i := 0; i < k; i++ {
		r.Mul(r, f.SetInt64(int64(n-i)))
	}
	return r
}

// powFloat sets z = x^e by repeated squaring, at z's precision.
func powFloat(z, x *big.Float, e uint64) {
	base := new(big.Float).SetPrec(z.Prec()).Set(x)
	z.SetInt64(1)
	for e > 0 {
		if e&1 == 1 {
			z.Mul(z, base)
		}
		e >>= 1
		if e > 0 {
			base.Mul(base, base)
		}
	}
}
