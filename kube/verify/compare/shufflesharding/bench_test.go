package shuffleshardingcompare

import (
	"fmt"
	"testing"

	fairslice "github.com/fairslice/fairslice/shufflesharding"
	upstream "k8s.io/apiserver/pkg/util/shufflesharding"
)

// benchConfigs are the (deck, hand) sizes benchmarked: the common APF
// setting (64, 6), the (128, 8) of the reference doc, and a 60-bit deal.
var benchConfigs = [][2]int{{128, 8}, {64, 6}, {1024, 6}}

// LCG constants (Knuth's MMIX) used to advance the hash between deals, so
// that neither dealer sees a constant input.
const (
	lcgMul = 6364136223846793005
	lcgAdd = 1442695040888963407
)

var sink []int

// BenchmarkDealIntoHand compares the two dealers on identical workloads:
// the same sizes, the same hash sequence and a reused hand buffer. Compare
// the upstream/... and fairslice/... results with benchstat.
func BenchmarkDealIntoHand(b *testing.B) {
	for _, c := range benchConfigs {
		deck, hand := c[0], c[1]
		name := fmt.Sprintf("deck=%d,hand=%d", deck, hand)
		b.Run("impl=upstream/"+name, func(b *testing.B) {
			d, err := upstream.NewDealer(deck, hand)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]int, 0, hand)
			h := uint64(0x0123456789abcdef)
			b.ReportAllocs()
			for b.Loop() {
				h = h*lcgMul + lcgAdd
				buf = d.DealIntoHand(h, buf)
			}
			sink = buf
		})
		b.Run("impl=fairslice/"+name, func(b *testing.B) {
			d, err := fairslice.NewDealer(deck, hand)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]int, 0, hand)
			h := uint64(0x0123456789abcdef)
			b.ReportAllocs()
			for b.Loop() {
				h = h*lcgMul + lcgAdd
				buf = d.DealIntoHand(h, buf)
			}
			sink = buf
		})
	}
}
