package apfmetrics

import (
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// timingRatio is one series of upstream's timing-ratio histograms: a
// numerator and a denominator that change over time, and a histogram of
// the ratio observed once per nanosecond, that is, each bucket counts the
// nanoseconds the ratio spent in it and the sum is the time integral of
// the ratio in nanoseconds (upstream's TimingRatioHistogram over its
// weighted histogram, with time read from the Metrics' clock).
type timingRatio struct {
	num, den float64
	last     time.Time
	counts   []uint64 // per bucket, the last one +Inf
	sum      float64
}

// timingRatioVec is a vector of timingRatio series by label values.
type timingRatioVec struct {
	desc    *prometheus.Desc
	bounds  []float64
	now     func() time.Time
	mu      sync.Mutex
	series  map[string]*timingRatio
	labels  map[string][]string
	initDen float64
}

func newTimingRatioVec(now func() time.Time, name, help string, bounds []float64, constLabels prometheus.Labels, labels ...string) *timingRatioVec {
	return &timingRatioVec{
		desc:   prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, name), help, labels, constLabels),
		bounds: bounds, now: now, series: map[string]*timingRatio{}, labels: map[string][]string{}, initDen: 1,
	}
}

// get returns the series for lvs, created with numerator 0 and
// denominator 1 (upstream's initial values). Called with v.mu held.
func (v *timingRatioVec) get(now time.Time, lvs ...string) *timingRatio {
	k := strings.Join(lvs, "\xff")
	s := v.series[k]
	if s == nil {
		s = &timingRatio{den: v.initDen, last: now, counts: make([]uint64, len(v.bounds)+1)}
		v.series[k] = s
		v.labels[k] = append([]string(nil), lvs...)
	}
	return s
}

// advance accounts for the time since s last changed, at its ratio.
func (v *timingRatioVec) advance(s *timingRatio, now time.Time) {
	d := now.Sub(s.last)
	if d <= 0 {
		return
	}
	r := s.num / s.den
	if s.den == 0 {
		// Upstream divides by zero too (+Inf, or NaN for 0/0, which would
		// make the sum NaN for good): count 0/0 as 0.
		r = 0
		if s.num != 0 {
			r = math.Inf(int(math.Copysign(1, s.num)))
		}
	}
	s.counts[sort.SearchFloat64s(v.bounds, r)] += uint64(d)
	s.sum += float64(d) * r
	s.last = now
}

// add changes the numerator of the series lvs by delta at the clock's now.
func (v *timingRatioVec) add(delta float64, lvs ...string) {
	now := v.now()
	v.mu.Lock()
	s := v.get(now, lvs...)
	v.advance(s, now)
	s.num += delta
	v.mu.Unlock()
}

// setDenominator sets the denominator of the series lvs.
func (v *timingRatioVec) setDenominator(den float64, lvs ...string) {
	now := v.now()
	v.mu.Lock()
	s := v.get(now, lvs...)
	v.advance(s, now)
	s.den = den
	v.mu.Unlock()
}

// deletePartial drops the series whose label value i is value.
func (v *timingRatioVec) deletePartial(i int, value string) {
	v.mu.Lock()
	for k, lvs := range v.labels {
		if lvs[i] == value {
			delete(v.series, k)
			delete(v.labels, k)
		}
	}
	v.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (v *timingRatioVec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

// Collect implements prometheus.Collector: every series is brought up to
// the clock's now first, as upstream's Write does.
func (v *timingRatioVec) Collect(ch chan<- prometheus.Metric) {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	for k, s := range v.series {
		v.advance(s, now)
		buckets := make(map[float64]uint64, len(v.bounds))
		var n uint64
		for i, b := range v.bounds {
			n += s.counts[i]
			buckets[b] = n
		}
		n += s.counts[len(v.bounds)]
		ch <- prometheus.MustNewConstHistogram(v.desc, n, s.sum, buckets, v.labels[k]...)
	}
}
