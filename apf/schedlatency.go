package apf

import (
	"math"
	"runtime/metrics"
	"time"
)

// schedLatencyMetric is the Go runtime's histogram of the time goroutines
// spend runnable before running.
const schedLatencyMetric = "/sched/latencies:seconds"

// schedLatency reads the p99 of the scheduler latency over the time since
// its previous read, from the runtime's cumulative histogram.
type schedLatency struct {
	sample []metrics.Sample
	prev   []uint64
}

func newSchedLatency() *schedLatency {
	s := &schedLatency{sample: []metrics.Sample{{Name: schedLatencyMetric}}}
	s.p99() // the first read is the baseline of the cumulative counts
	return s
}

// p99 returns the 99th percentile of the latencies recorded since the
// last call (the upper bound of its bucket), or 0 if none were recorded or
// the runtime lacks the metric.
func (s *schedLatency) p99() time.Duration {
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := s.sample[0].Value.Float64Histogram()
	if len(s.prev) != len(h.Counts) {
		s.prev = make([]uint64, len(h.Counts))
	}
	delta := make([]uint64, len(h.Counts))
	var total uint64
	for i, c := range h.Counts {
		delta[i] = c - s.prev[i]
		total += delta[i]
		s.prev[i] = c
	}
	return histogramQuantile(delta, h.Buckets, total, 0.99)
}

// histogramQuantile returns the upper bound of the bucket holding the q
// quantile of counts (bucket i spans buckets[i]..buckets[i+1] seconds).
func histogramQuantile(counts []uint64, buckets []float64, total uint64, q float64) time.Duration {
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			up := buckets[i+1]
			if math.IsInf(up, 1) {
				up = buckets[i]
			}
			return time.Duration(up * float64(time.Second))
		}
	}
	return 0
}
