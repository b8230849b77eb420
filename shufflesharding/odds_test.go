package shufflesharding

import (
	"math"
	"math/big"
	"testing"
)

// squishByUnionDP is the reference: the method the Kubernetes docs' table
// was computed with, tracking the distribution of the elephants' union size
// in exact rational arithmetic.
func squishByUnionDP(n, h, e int) *big.Rat {
	binom := func(a, b int) *big.Int {
		if b < 0 || a < b {
			return new(big.Int)
		}
		return new(big.Int).Binomial(int64(a), int64(b))
	}
	total := binom(n, h)
	dist := map[int]*big.Rat{0: big.NewRat(1, 1)}
	for i := 0; i < e; i++ {
		next := map[int]*big.Rat{}
		for u, p := range dist {
			for k := 0; k <= h; k++ {
				ways := new(big.Int).Mul(binom(n-u, k), binom(u, h-k))
				if ways.Sign() == 0 {
					continue
				}
				q := new(big.Rat).SetFrac(ways, total)
				q.Mul(q, p)
				if next[u+k] == nil {
					next[u+k] = new(big.Rat)
				}
				next[u+k].Add(next[u+k], q)
			}
		}
		dist = next
	}
	sum := new(big.Rat)
	for u, p := range dist {
		c := new(big.Rat).SetFrac(binom(u, h), total)
		sum.Add(sum, c.Mul(c, p))
	}
	return sum
}

func TestSquishProbabilityMatchesUnionDP(t *testing.T) {
	cases := []struct{ n, h, e int }{
		{1, 1, 1}, {2, 1, 1}, {2, 1, 3}, {4, 2, 2}, {8, 3, 4}, {10, 3, 5},
		{16, 4, 1}, {16, 4, 4}, {16, 4, 16}, {32, 12, 1}, {32, 12, 4}, {32, 10, 4},
		{64, 8, 4}, {64, 6, 16}, {128, 6, 4}, {20, 15, 3}, {30, 2, 40},
	}
	for _, c := range cases {
		want, _ := squishByUnionDP(c.n, c.h, c.e).Float64()
		got := SquishProbability(c.n, c.h, c.e)
		if rel := math.Abs(got-want) / want; rel > 1e-14 {
			t.Errorf("SquishProbability(%d, %d, %d) = %.17g, want %.17g (rel err %.3g)", c.n, c.h, c.e, got, want, rel)
		}
	}
}

func TestSquishProbabilityOneElephantIsOneOverBinomial(t *testing.T) {
	for _, c := range []struct{ n, h int }{{4096, 15}, {4096, 1}, {1024, 6}, {128, 8}, {64, 6}, {1 << 26, 3}, {4096, 4095}} {
		b := new(big.Float).SetPrec(200).SetInt(new(big.Int).Binomial(int64(c.n), int64(c.h)))
		want, _ := new(big.Float).SetPrec(200).Quo(big.NewFloat(1).SetPrec(200), b).Float64()
		got := SquishProbability(c.n, c.h, 1)
		if rel := math.Abs(got-want) / want; rel > 1e-15 {
			t.Errorf("SquishProbability(%d, %d, 1) = %.17g, want %.17g (rel err %.3g)", c.n, c.h, got, want, rel)
		}
	}
}

// TestSquishProbabilityLargeDecksAgainstUnionDP checks the 1e-12 bound on
// large decks and hands.
func TestSquishProbabilityLargeDecksAgainstUnionDP(t *testing.T) {
	for _, c := range []struct{ n, h, e int }{{4096, 15, 2}, {4096, 15, 6}, {4096, 6, 16}, {1024, 6, 16}, {512, 6, 3}, {64, 10, 16}, {32, 12, 16}} {
		want, _ := squishByUnionDP(c.n, c.h, c.e).Float64()
		got := SquishProbability(c.n, c.h, c.e)
		if rel := math.Abs(got-want) / want; rel > 1e-12 {
			t.Errorf("SquishProbability(%d, %d, %d) = %.17g, want %.17g (rel err %.3g)", c.n, c.h, c.e, got, want, rel)
		}
	}
}

func TestSquishProbabilityEdges(t *testing.T) {
	nan := []struct{ n, h, e int }{{0, 0, 1}, {-1, 1, 1}, {4, 0, 1}, {4, 5, 1}, {4, 2, -1}, {1<<26 + 1, 1, 1}}
	for _, c := range nan {
		if got := SquishProbability(c.n, c.h, c.e); !math.IsNaN(got) {
			t.Errorf("SquishProbability(%d, %d, %d) = %v, want NaN", c.n, c.h, c.e, got)
		}
	}
	exact := []struct {
		n, h, e int
		want    float64
	}{
		{4, 2, 0, 0}, {4, 4, 1, 1}, {4, 4, 0, 0}, {1, 1, 7, 1}, {2, 1, 1, 0.5}, {2, 1, 2, 0.75}, {3, 1, 2, 5.0 / 9},
	}
	for _, c := range exact {
		if got := SquishProbability(c.n, c.h, c.e); math.Abs(got-c.want) > 1e-16 {
			t.Errorf("SquishProbability(%d, %d, %d) = %v, want %v", c.n, c.h, c.e, got, c.want)
		}
	}
}

func TestSquishProbabilityGrowsWithElephants(t *testing.T) {
	for _, c := range []struct{ n, h int }{{32, 12}, {128, 8}, {1024, 6}} {
		prev := 0.0
		for e := 1; e <= 4096; e *= 2 {
			p := SquishProbability(c.n, c.h, e)
			if !(p >= prev) || p > 1 {
				t.Fatalf("SquishProbability(%d, %d, %d) = %v, not in [%v, 1]", c.n, c.h, e, p, prev)
			}
			prev = p
		}
		if prev < 0.999 {
			t.Errorf("SquishProbability(%d, %d, 4096) = %v, want ≈1", c.n, c.h, prev)
		}
	}
}

func BenchmarkSquishProbability(b *testing.B) {
	for _, c := range []struct {
		name    string
		n, h, e int
	}{{"deck=64,hand=8,e=16", 64, 8, 16}, {"deck=1024,hand=6,e=16", 1024, 6, 16}, {"deck=4096,hand=15,e=1000", 4096, 15, 1000}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				SquishProbability(c.n, c.h, c.e)
			}
		})
	}
}

// docsTable is the "Example Shuffle Sharding Configurations" table of the
// Kubernetes API Priority and Fairness documentation: (handSize, queues) and
// the squish probability for 1, 4 and 16 elephants.
var docsTable = []struct {
	hand, queues int
	p1, p4, p16  float64
}{
	{12, 32, 4.428838398950118e-09, 0.11431348830099144, 0.9935089607656024},
	{10, 32, 1.550093439632541e-08, 0.0626479840223545, 0.9753101519027554},
	{10, 64, 6.601827268370426e-12, 0.00045571320990370776, 0.49999929150089345},
	{9, 64, 3.6310049976037345e-11, 0.00045501212304112273, 0.4282314876454858},
	{8, 64, 2.25929199850899e-10, 0.0004886697053040446, 0.35935114681123076},
	{8, 128, 6.994461389026097e-13, 3.4055790161620863e-06, 0.02746173137155063},
	{7, 128, 1.0579122850901972e-11, 6.960839379258192e-06, 0.02406157386340147},
	{7, 256, 7.597695465552631e-14, 6.728547142019406e-08, 0.0006709661542533682},
	{6, 256, 2.7134626662687968e-12, 2.9516464018476436e-07, 0.0008895654642000348},
	{6, 512, 4.116062922897309e-14, 4.982983350480894e-09, 2.26025764343413e-05},
	{6, 1024, 6.337324016514285e-16, 8.09060164312957e-11, 4.517408062903668e-07},
}

// TestSquishProbabilityDocsTable: the docs' values were summed in float64
// and differ from the exact value in the last digit or two at most.
func TestSquishProbabilityDocsTable(t *testing.T) {
	for _, r := range docsTable {
		for _, c := range []struct {
			e    int
			want float64
		}{{1, r.p1}, {4, r.p4}, {16, r.p16}} {
			got := SquishProbability(r.queues, r.hand, c.e)
			if rel := math.Abs(got-c.want) / c.want; rel > 1e-14 {
				t.Errorf("SquishProbability(%d, %d, %d) = %.17g, want %.17g (rel err %.3g)", r.queues, r.hand, c.e, got, c.want, rel)
			}
		}
	}
}
