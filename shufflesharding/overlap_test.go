package shufflesharding

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// overlapRatHypergeometric is C(ta,x)·C(c−ta,tb−x)/C(c,tb) as exact rationals.
func overlapRatHypergeometric(c, ta, tb int) []*big.Rat {
	den := new(big.Int).Binomial(int64(c), int64(tb))
	out := make([]*big.Rat, min(ta, tb)+1)
	for x := range out {
		out[x] = new(big.Rat)
		if tb-x > c-ta {
			continue
		}
		num := new(big.Int).Binomial(int64(ta), int64(x))
		num.Mul(num, new(big.Int).Binomial(int64(c-ta), int64(tb-x)))
		out[x].SetFrac(num, den)
	}
	return out
}

func overlapRatConvolve(f, g []*big.Rat) []*big.Rat {
	out := make([]*big.Rat, len(f)+len(g)-1)
	for i := range out {
		out[i] = new(big.Rat)
	}
	for i, fv := range f {
		for j, gv := range g {
			out[i+j].Add(out[i+j], new(big.Rat).Mul(fv, gv))
		}
	}
	return out
}

func overlapZonePermutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range overlapZonePermutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

// bruteOverlapDistribution is the exact oracle: average over every pair of zone orders
// of the convolution of per-zone hypergeometrics, with the per-zone counts
// found by simulating the round-robin directly.
func bruteOverlapDistribution(zoneSizes []int, size int) []*big.Rat {
	total := 0
	for _, c := range zoneSizes {
		total += c
	}
	size = min(size, total)
	takes := func(order []int) []int {
		t := make([]int, len(zoneSizes))
		left := size
		for r := 0; left > 0; r++ {
			for _, z := range order {
				if left > 0 && zoneSizes[z] > r {
					t[z]++
					left--
				}
			}
		}
		return t
	}
	perms := overlapZonePermutations(len(zoneSizes))
	sum := make([]*big.Rat, size+1)
	for i := range sum {
		sum[i] = new(big.Rat)
	}
	for _, pa := range perms {
		ta := takes(pa)
		for _, pb := range perms {
			tb := takes(pb)
			dist := []*big.Rat{big.NewRat(1, 1)}
			for z, c := range zoneSizes {
				dist = overlapRatConvolve(dist, overlapRatHypergeometric(c, ta[z], tb[z]))
			}
			for x, v := range dist {
				sum[x].Add(sum[x], v)
			}
		}
	}
	n := big.NewRat(int64(len(perms)*len(perms)), 1)
	for _, v := range sum {
		v.Quo(v, n)
	}
	return sum
}

func checkOverlapDistribution(t pickerFataler, what string, got []float64, want []*big.Rat, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %v (len %d), want len %d", what, got, len(got), len(want))
	}
	for x := range got {
		w, _ := want[x].Float64()
		if math.Abs(got[x]-w) > tol {
			t.Fatalf("%s[%d] = %.17g, want %.17g (±%g); all: %v", what, x, got[x], w, tol, got)
		}
	}
}

func TestOverlapDistributionMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		zoneSizes := rapid.SliceOfN(rapid.IntRange(1, 6), 1, 4).Draw(t, "zoneSizes")
		total := 0
		for _, c := range zoneSizes {
			total += c
		}
		size := rapid.IntRange(0, total+1).Draw(t, "size")
		got, err := OverlapDistribution(zoneSizes, size)
		if err != nil {
			t.Fatalf("OverlapDistribution(%v, %d) error %v", zoneSizes, size, err)
		}
		checkOverlapDistribution(t, fmt.Sprintf("OverlapDistribution(%v, %d)", zoneSizes, size), got, bruteOverlapDistribution(zoneSizes, size), 1e-12)
	})
}

func overlapRats(fracs ...[2]int64) []*big.Rat {
	out := make([]*big.Rat, len(fracs))
	for i, f := range fracs {
		out[i] = big.NewRat(f[0], f[1])
	}
	return out
}

func TestOverlapDistributionKnownValues(t *testing.T) {
	tests := []struct {
		name      string
		zoneSizes []int
		size      int
		want      []*big.Rat
	}{
		// Cortex guide: 50 ingesters, 4 per tenant; C(50,4) = 230300.
		{"cortex", []int{50}, 4, overlapRats([2]int64{163185, 230300}, [2]int64{60720, 230300}, [2]int64{6210, 230300}, [2]int64{184, 230300}, [2]int64{1, 230300})},
		// dskit test setup zone-aware: Binomial(3, 1/30).
		{"dskit zoned", []int{30, 30, 30}, 3, overlapRats([2]int64{29 * 29 * 29, 27000}, [2]int64{3 * 29 * 29, 27000}, [2]int64{3 * 29, 27000}, [2]int64{1, 27000})},
		// dskit's table is the unzoned hypergeometric; C(90,3) = 117480.
		{"dskit unzoned", []int{90}, 3, overlapRats([2]int64{105995, 117480}, [2]int64{11223, 117480}, [2]int64{261, 117480}, [2]int64{1, 117480})},
		// Size beyond the members is clamped: both shards are everything.
		{"clamped", []int{2, 1}, 5, overlapRats([2]int64{0, 1}, [2]int64{0, 1}, [2]int64{0, 1}, [2]int64{1, 1})},
		{"size zero", []int{3}, 0, overlapRats([2]int64{1, 1})},
		// Two zones of 2, size 1: the same zone w.p. 1/2, then the same
		// member w.p. 1/2.
		{"one each", []int{2, 2}, 1, overlapRats([2]int64{3, 4}, [2]int64{1, 4})},
	}
	for _, tt := range tests {
		got, err := OverlapDistribution(tt.zoneSizes, tt.size)
		if err != nil {
			t.Fatalf("OverlapDistribution(%v, %d) error %v", tt.zoneSizes, tt.size, err)
		}
		checkOverlapDistribution(t, fmt.Sprintf("%s: OverlapDistribution(%v, %d)", tt.name, tt.zoneSizes, tt.size), got, tt.want, 1e-13)
	}
}

func TestOverlapDistributionErrors(t *testing.T) {
	tests := []struct {
		zoneSizes []int
		size      int
		want      []string
	}{
		{nil, 1, []string{"zoneSizes is empty"}},
		{[]int{3, 0, -2}, 1, []string{"zoneSizes[1] 0 is not positive", "zoneSizes[2] -2 is not positive"}},
		{[]int{3}, -1, []string{"size -1 is negative"}},
		{[]int{math.MaxInt, 1}, 1, []string{"zoneSizes sum overflows at zoneSizes[1] 1"}},
		{[]int{}, -3, []string{"zoneSizes is empty", "size -3 is negative"}},
	}
	for _, tt := range tests {
		got, err := OverlapDistribution(tt.zoneSizes, tt.size)
		if err == nil {
			t.Errorf("OverlapDistribution(%v, %d) = %v, nil, want an error", tt.zoneSizes, tt.size, got)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) || !strings.HasPrefix(err.Error(), "shufflesharding: OverlapDistribution: ") {
				t.Errorf("OverlapDistribution(%v, %d) error = %q, want the package prefix and %q", tt.zoneSizes, tt.size, err, w)
			}
		}
	}
}

// TestOverlapDistributionSumsToOne covers sizes too large for the brute
// force, where log-space terms must still add up.
func TestOverlapDistributionSumsToOne(t *testing.T) {
	for _, tt := range []struct {
		zoneSizes []int
		size      int
	}{
		{[]int{4096}, 8}, {[]int{4096}, 2000}, {[]int{1365, 1365, 1366}, 8}, {[]int{100, 200, 300, 400, 500}, 777}, {[]int{1, 2, 3, 500, 501}, 400},
	} {
		got, err := OverlapDistribution(tt.zoneSizes, tt.size)
		if err != nil {
			t.Fatalf("OverlapDistribution(%v, %d) error %v", tt.zoneSizes, tt.size, err)
		}
		sum, mean := 0.0, 0.0
		for x, p := range got {
			if p < 0 || math.IsNaN(p) {
				t.Fatalf("OverlapDistribution(%v, %d)[%d] = %v, want a probability", tt.zoneSizes, tt.size, x, p)
			}
			sum += p
			mean += float64(x) * p
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("sum of OverlapDistribution(%v, %d) = %v, want 1", tt.zoneSizes, tt.size, sum)
		}
		if tt.size > 0 && mean <= 0 {
			t.Errorf("mean of OverlapDistribution(%v, %d) = %v, want positive", tt.zoneSizes, tt.size, mean)
		}
	}
	// Unzoned mean overlap is k²/n.
	got, _ := OverlapDistribution([]int{4096}, 2000)
	mean := 0.0
	for x, p := range got {
		mean += float64(x) * p
	}
	if want := 2000.0 * 2000 / 4096; math.Abs(mean-want) > 1e-9*want {
		t.Errorf("mean of OverlapDistribution([4096], 2000) = %v, want %v", mean, want)
	}
}

func TestPickerOverlapDistributionMatchesFunction(t *testing.T) {
	var members []Member
	for i := range 21 {
		members = append(members, Member{Name: fmt.Sprint(i), Zone: fmt.Sprint(i % 4)})
	}
	p := mustPicker(t, members)
	for size := -1; size <= 23; size++ {
		want, err := OverlapDistribution([]int{6, 5, 5, 5}, max(size, 0))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.OverlapDistribution(size); !slices.Equal(got, want) {
			t.Errorf("Picker.OverlapDistribution(%d) = %v, want %v", size, got, want)
		}
	}
}

// TestOverlapDistributionMatchesPicker compares the formula with overlap
// histograms of the picker itself over many independent key pairs.
func TestOverlapDistributionMatchesPicker(t *testing.T) {
	const pairs = 40000
	tests := []struct {
		zoneSizes []int
		size      int
	}{
		{[]int{50}, 4},
		{[]int{30, 30, 30}, 3},
		{[]int{4, 4, 4, 4}, 6},     // two extras among four zones
		{[]int{5, 7, 9}, 8},        // unequal zones, partial round
		{[]int{1, 2, 10}, 9},       // small zones used up
		{[]int{12, 12, 12, 12}, 5}, // one extra
	}
	seed := uint64(0x5eed)
	t.Logf("seed %#x", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, tt := range tests {
		var members []Member
		for z, c := range tt.zoneSizes {
			for i := range c {
				m := Member{Name: fmt.Sprintf("m%d-%d", z, i)}
				if len(tt.zoneSizes) > 1 {
					m.Zone = fmt.Sprintf("zone%d", z)
				}
				members = append(members, m)
			}
		}
		p := mustPicker(t, members)
		want, err := OverlapDistribution(tt.zoneSizes, tt.size)
		if err != nil {
			t.Fatal(err)
		}
		hist := make([]int, tt.size+1)
		in := make([]bool, len(members))
		var a, b []int
		for range pairs {
			a = p.ShardInto(rng.Uint64(), tt.size, a)
			b = p.ShardInto(rng.Uint64(), tt.size, b)
			for _, i := range a {
				in[i] = true
			}
			x := 0
			for _, i := range b {
				if in[i] {
					x++
				}
			}
			for _, i := range a {
				in[i] = false
			}
			hist[x]++
		}
		for x, p := range want {
			got := float64(hist[x]) / pairs
			// Five standard errors, plus a count of slack for tiny p.
			tol := 5*math.Sqrt(p*(1-p)/pairs) + 2.0/pairs
			if math.Abs(got-p) > tol {
				t.Errorf("zones %v size %d: empirical P(overlap=%d) = %.5f over %d pairs, OverlapDistribution = %.5f (±%.5f)", tt.zoneSizes, tt.size, x, got, pairs, p, tol)
			}
		}
	}
}
