package fairqueue

import (
	"math"
	"time"
)

// DemandStats integrates a piecewise-constant quantity over time: the seat
// demand of a queue set (seats executing plus seats waiting), as upstream's
// seat-demand integrator (fairqueuing.Integrator) does for APF's concurrency
// borrowing. It yields the time-weighted average, the standard deviation and
// the extremes since the last Reset.
//
// As upstream, the minimum starts at 0 (not at the first value) until the
// first Reset, which sets both extremes to the current value. It keeps its
// own time of the last update and integrates only when it is set or read,
// in seconds, with upstream's float64 operations in upstream's order, so
// that the same calls at the same times give the same bits.
//
// The zero value starts integrating at the first call. Not safe for
// concurrent use; O(1) per call, no allocations.
type DemandStats struct {
	started  bool
	last     time.Time
	x        float64
	elapsed  float64 // seconds
	ix, ixx  float64 // ∫x dt, ∫x² dt, with dt in seconds
	min, max float64
}

// DemandResults summarizes a DemandStats integration.
type DemandResults struct {
	Duration  float64 // seconds integrated
	Average   float64 // time-weighted; NaN if Duration is 0
	Deviation float64 // standard deviation; NaN if Duration is 0 or rounding makes the variance negative
	Min, Max  float64 // extremes (the high watermark is Max)
}

// Start begins integration at now with value x.
func (d *DemandStats) Start(now time.Time, x float64) {
	*d = DemandStats{started: true, last: now, x: x}
	d.min = math.Min(0, x)
	d.max = math.Max(0, x)
}

func (d *DemandStats) advance(now time.Time) {
	if !d.started {
		d.started, d.last = true, now
		return
	}
	if now == d.last {
		// No time passed (a cheap exact test): integrating zero seconds
		// would leave every sum as it is.
		return
	}
	d.integrate(now, now.Sub(d.last))
}

// integrate adds the current value over dt, the time from the last update
// to now.
func (d *DemandStats) integrate(now time.Time, dt time.Duration) {
	s := dt.Seconds()
	d.last = now
	d.elapsed += s
	d.ix += d.x * s
	d.ixx += d.x * d.x * s
}

// Set records that the quantity is x from now on.
func (d *DemandStats) Set(now time.Time, x float64) {
	d.advance(now)
	d.setValue(x)
}

// setAfter is Set for a caller that knows dt = now − the last update (a
// QueueSet keeps it as it syncs its time), saving the time arithmetic.
func (d *DemandStats) setAfter(now time.Time, dt time.Duration, x float64) {
	if dt != 0 {
		d.integrate(now, dt)
	}
	d.setValue(x)
}

func (d *DemandStats) setValue(x float64) {
	d.x = x
	if x < d.min {
		d.min = x
	}
	if x > d.max {
		d.max = x
	}
}

// Value returns the current value of the quantity.
func (d *DemandStats) Value() float64 { return d.x }

// Results integrates up to now and returns the summary.
func (d *DemandStats) Results(now time.Time) DemandResults {
	d.advance(now)
	res := DemandResults{Duration: d.elapsed, Min: d.min, Max: d.max}
	if d.elapsed <= 0 {
		res.Average, res.Deviation = math.NaN(), math.NaN()
		return res
	}
	res.Average = d.ix / d.elapsed
	variance := d.ixx/d.elapsed - res.Average*res.Average
	if variance >= 0 {
		res.Deviation = math.Sqrt(variance)
	} else {
		res.Deviation = math.NaN()
	}
	return res
}

// Reset returns Results(now) and restarts the integration at now, with both
// extremes set to the current value.
func (d *DemandStats) Reset(now time.Time) DemandResults {
	res := d.Results(now)
	d.elapsed, d.ix, d.ixx = 0, 0, 0
	d.min, d.max = d.x, d.x
	return res
}
