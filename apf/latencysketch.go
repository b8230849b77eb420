package apf

import (
	"math"
	"math/bits"
	"time"
)

// The sketch's buckets: sketchSub per power of two of nanoseconds, from
// 2^sketchMinExp ns (about 1 µs; shorter executions share the first
// bucket) to 2^(sketchMinExp+sketchOctaves) ns (about 18 min; longer ones
// share the last). A bucket is at most 1/sketchSub (6.25%) of its lower
// bound wide.
const (
	sketchSubBits = 4
	sketchSub     = 1 << sketchSubBits
	sketchMinExp  = 10
	sketchOctaves = 30
	sketchBuckets = sketchOctaves * sketchSub
)

// latencySketch counts execution times in log-spaced buckets, so that the
// mean of a window's fastest executions can be read without keeping the
// samples. The zero value is empty. add is O(1) and does not allocate;
// sub and lowMean are O(sketchBuckets). Not safe for concurrent use.
type latencySketch struct {
	n      int
	counts [sketchBuckets]uint32
}

// sketchBucket returns the bucket that holds d.
func sketchBucket(d time.Duration) int {
	if d < 1<<sketchMinExp {
		return 0
	}
	v := uint64(d)
	e := bits.Len64(v) - 1
	if e >= sketchMinExp+sketchOctaves {
		return sketchBuckets - 1
	}
	sub := int(v>>(e-sketchSubBits)) & (sketchSub - 1)
	return (e-sketchMinExp)*sketchSub + sub
}

// sketchValue returns the middle of bucket i.
func sketchValue(i int) time.Duration {
	e, sub := i/sketchSub+sketchMinExp, i%sketchSub
	lower := uint64(sketchSub+sub) << (e - sketchSubBits)
	return time.Duration(lower + uint64(1)<<(e-sketchSubBits)/2)
}

func (s *latencySketch) add(d time.Duration) {
	s.counts[sketchBucket(d)]++
	s.n++
}

// sub removes what o counted from s; o must be an earlier copy of s.
func (s *latencySketch) sub(o *latencySketch) {
	for i, c := range o.counts {
		s.counts[i] -= c
	}
	s.n -= o.n
}

// lowMean returns the mean of the ⌈f·n⌉ shortest executions (at least
// one), each taken as its bucket's middle, or 0 when the sketch is empty.
func (s *latencySketch) lowMean(f float64) time.Duration {
	if s.n == 0 {
		return 0
	}
	k := max(1, int(math.Ceil(f*float64(s.n))))
	left, sum := k, 0.0
	for i, c := range s.counts {
		take := min(left, int(c))
		sum += float64(take) * float64(sketchValue(i))
		left -= take
		if left == 0 {
			break
		}
	}
	return time.Duration(sum / float64(k))
}
