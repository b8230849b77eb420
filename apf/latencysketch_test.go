package apf

import (
	"testing"
	"time"
)

func TestSketchBucket(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{0, 0},
		{1023, 0},
		{1024, 0}, // 2^10 ns: the first bucket's lower bound
		{1024 + 64, 1},
		{2047, sketchSub - 1},
		{2048, sketchSub},
		{20 * time.Millisecond, (24-sketchMinExp)*sketchSub + 3}, // 2^24·(1 + 3/16) ≤ 20 ms < 2^24·(1 + 4/16)
		{1 << 40, sketchBuckets - 1},
		{1 << 62, sketchBuckets - 1},
	} {
		if got := sketchBucket(tc.d); got != tc.want {
			t.Errorf("sketchBucket(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
	// Every bucket's middle lies in it, and buckets are at most 1/16 of
	// their value wide.
	for i := range sketchBuckets {
		v := sketchValue(i)
		if got := sketchBucket(v); got != i {
			t.Fatalf("sketchBucket(sketchValue(%d) = %v) = %d, want %d", i, v, got, i)
		}
		if i > 0 {
			if w := float64(v-sketchValue(i-1)) / float64(v); w > 1.0/sketchSub {
				t.Fatalf("bucket %d (%v) is %.3f of its value wide, want at most 1/%d", i, v, w, sketchSub)
			}
		}
	}
}

// The signal leaves the slowest tenth out: a few stalls do not move it,
// but queueing that delays some of the requests does.
func TestSketchLowMean(t *testing.T) {
	const ms = time.Millisecond
	at := func(d time.Duration) float64 { return float64(sketchValue(sketchBucket(d))) }
	for _, tc := range []struct {
		name  string
		execs map[time.Duration]int
		want  float64 // the mean of the fastest 90%, to the buckets' middles
	}{
		{"empty", nil, 0},
		{"one", map[time.Duration]int{20 * ms: 1}, at(20 * ms)},
		{"two stalls in twenty", map[time.Duration]int{20 * ms: 18, 300 * ms: 2}, at(20 * ms)},
		{"a quarter waited a full execution", map[time.Duration]int{20 * ms: 15, 40 * ms: 5},
			(15*at(20*ms) + 3*at(40*ms)) / 18},
	} {
		var s latencySketch
		for d, n := range tc.execs {
			for range n {
				s.add(d)
			}
		}
		if got := s.lowMean(AdaptiveLatencyKept); float64(got) != float64(time.Duration(tc.want)) {
			t.Errorf("%s: lowMean(%v) = %v, want %v", tc.name, AdaptiveLatencyKept, got, time.Duration(tc.want))
		}
	}
}

// sub leaves what was added after the copy.
func TestSketchSub(t *testing.T) {
	var s latencySketch
	s.add(10 * time.Millisecond)
	s.add(time.Second)
	snap := s
	s.add(20 * time.Millisecond)
	s.sub(&snap)
	var want latencySketch
	want.add(20 * time.Millisecond)
	if s != want {
		t.Errorf("after sub: n %d, lowMean %v; want n %d, lowMean %v", s.n, s.lowMean(1), want.n, want.lowMean(1))
	}
}

func TestSketchAddDoesNotAllocate(t *testing.T) {
	var s latencySketch
	if n := testing.AllocsPerRun(1000, func() { s.add(20 * time.Millisecond) }); n != 0 {
		t.Errorf("latencySketch.add allocates %v times, want 0", n)
	}
}

func BenchmarkSketchAdd(b *testing.B) {
	var s latencySketch
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.add(time.Duration(i&0xffff) * time.Microsecond)
	}
}
