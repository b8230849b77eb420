package apf

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

// Constants of the adaptive total (see the package doc, "Adaptive total").
const (
	// DefaultAdaptiveInterval is how often the adaptive total is revised.
	DefaultAdaptiveInterval = 100 * time.Millisecond
	// DefaultAdaptiveMinSamples is how many finished requests a revision
	// needs; with fewer, the window is extended.
	DefaultAdaptiveMinSamples = 10
	// DefaultAdaptiveTolerance is how far the latency may rise above its
	// baseline, as a ratio, before the total shrinks; why 1.2, in the
	// package doc.
	DefaultAdaptiveTolerance = 1.2
	// AdaptiveLatencyKept is the fraction of a window's executions, the
	// fastest, whose mean is the latency signal: the slowest 10% (stalls,
	// a descheduled process, a late timer) are left out, but unlike a low
	// quantile the mean still rises when only some requests queue.
	AdaptiveLatencyKept = 0.9
	// AdaptiveSlowStartFactor multiplies the total in each window of slow
	// start.
	AdaptiveSlowStartFactor = 4
	// AdaptiveSmoothing is how much of the way to its target one steady
	// revision moves the total.
	AdaptiveSmoothing = 0.25
	// DefaultProbeInterval is how often the baseline latency is measured
	// again, at the floor.
	DefaultProbeInterval = 30 * time.Second
	// AdaptiveMinGradient is the most one revision shrinks the total by:
	// to half.
	AdaptiveMinGradient = 0.5
	// AdaptiveHeadroom is the growth of one revision that saw no latency
	// rise and a level short of seats, in units of √total.
	AdaptiveHeadroom = 0.5
)

// AdaptiveOptions turn on the adaptive total (Options.Adaptive): the seats
// divided among the priority levels follow the latency the controller
// measures instead of staying at Options.ServerConcurrencyLimit. Zero
// fields take the defaults named beside them.
type AdaptiveOptions struct {
	// Min and Max bound the total. Min 0 means 1; the total never goes
	// below what the mandatory catch-all level needs to keep one seat,
	// whatever Min says. Max 0 means Options.ServerConcurrencyLimit, so
	// that adaptation never admits more than the static total would.
	Min, Max int
	// Interval is how often the total is revised (DefaultAdaptiveInterval).
	// It should be several times the typical request's execution time.
	Interval time.Duration
	// MinSamples is the number of finished requests a revision needs
	// (DefaultAdaptiveMinSamples).
	MinSamples int
	// Tolerance is the latency ratio over the baseline at which the total
	// starts to shrink (DefaultAdaptiveTolerance); at least 1.
	Tolerance float64
	// ProbeInterval is how often the baseline is measured again
	// (DefaultProbeInterval); a negative value measures it only at start.
	ProbeInterval time.Duration
	// SchedulerLatencyTarget, when positive, adds a second signal: the
	// p99 of the Go runtime's scheduling latency
	// (runtime/metrics /sched/latencies:seconds) over the window; above
	// the target the total shrinks by target/p99 (at most to half) and does
	// not grow. It reads the process's real runtime, so it makes the
	// controller's decisions depend on more than its Clock.
	SchedulerLatencyTarget time.Duration
}

// validate reports every bad field at once.
func (o *AdaptiveOptions) validate(serverCL int) error {
	var errs []error
	bad := func(field string, v any, why string) {
		errs = append(errs, fmt.Errorf("apf: Options.Adaptive.%s=%v %s", field, v, why))
	}
	if o.Min < 0 {
		bad("Min", o.Min, "must not be negative")
	}
	if o.Max < 0 {
		bad("Max", o.Max, "must not be negative")
	}
	// Max 0 means the ServerConcurrencyLimit: when that is missing, its own
	// error says so, and there is no ceiling to compare Min with.
	if m := o.resolvedMax(serverCL); max(o.Min, 1) > m && m > 0 {
		bad("Min", o.Min, fmt.Sprintf("must not exceed Max (%d)", o.resolvedMax(serverCL)))
	}
	if o.Interval < 0 {
		bad("Interval", o.Interval, "must not be negative")
	}
	if o.MinSamples < 0 {
		bad("MinSamples", o.MinSamples, "must not be negative")
	}
	if o.Tolerance != 0 && !(o.Tolerance >= 1) { // also refuses NaN
		bad("Tolerance", o.Tolerance, "must be at least 1")
	}
	if o.SchedulerLatencyTarget < 0 {
		bad("SchedulerLatencyTarget", o.SchedulerLatencyTarget, "must not be negative")
	}
	return errors.Join(errs...)
}

func (o *AdaptiveOptions) resolvedMax(serverCL int) int {
	if o.Max == 0 {
		return serverCL
	}
	return o.Max
}

// adaptive is the controller's shell around the rule: the sampling
// window's start and the schedule of revisions.
type adaptive struct {
	c         *Controller
	rule      gradientRule
	total     int // the total the rule decided (guarded by c.mu)
	min, max  int
	interval  time.Duration
	next      atomic.Int64 // UnixNano of the next revision
	countFrom atomic.Int64 // UnixNano: executions dispatched before are not sampled
	sched     func() time.Duration
	schedTgt  time.Duration
	// snap holds the levels' windows during a revision (guarded by c.mu),
	// kept to spare the revision an allocation.
	snap []window
}

// window is what a level accumulates between revisions. Guarded by lv.mu.
type window struct {
	lat     latencySketch
	pressed bool // a request waited or was rejected
}

func newAdaptive(c *Controller, o *AdaptiveOptions, serverCL int) *adaptive {
	a := &adaptive{c: c, min: max(1, o.Min), max: o.resolvedMax(serverCL), interval: o.Interval, schedTgt: o.SchedulerLatencyTarget}
	if a.interval == 0 {
		a.interval = DefaultAdaptiveInterval
	}
	a.rule = gradientRule{MinSamples: o.MinSamples, Tolerance: o.Tolerance, ProbeInterval: o.ProbeInterval}
	if a.rule.MinSamples == 0 {
		a.rule.MinSamples = DefaultAdaptiveMinSamples
	}
	if a.rule.Tolerance == 0 {
		a.rule.Tolerance = DefaultAdaptiveTolerance
	}
	if a.rule.ProbeInterval == 0 {
		a.rule.ProbeInterval = DefaultProbeInterval
	}
	if a.schedTgt > 0 {
		a.sched = newSchedLatency().p99
	}
	return a
}

// startAdaptiveLocked sets the first total: the floor, where the first
// probe measures the baseline. Called with c.mu held.
func (c *Controller) startAdaptiveLocked(now time.Time) {
	a := c.adapt
	floor := c.floorLocked()
	a.rule.start(now, floor)
	a.countFrom.Store(a.rule.countFrom.UnixNano())
	a.next.Store(now.Add(a.interval).UnixNano())
	a.total = floor
	if floor != c.total {
		c.planLocked(now, false, nil)
	}
}

// Total returns the seats currently divided among the priority levels:
// Options.ServerConcurrencyLimit, or with Options.Adaptive the adaptive
// total.
func (c *Controller) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// The adaptive total as the controller's admission hook: a request that
// waits or that the queue set rejects presses its level's window, a
// finished execution is a latency sample (unless abandoned, or dispatched
// before the window's start), and between requests the total is revised
// when its time has come.

func (a *adaptive) arrived(*ticket, time.Time) admission { return admitLet }

func (a *adaptive) withdraw(*ticket, time.Time) bool { return false }

func (a *adaptive) waiting(t *ticket) { t.lv.win.pressed = true }

func (a *adaptive) dispatching(*ticket) bool { return true }

// rejected presses the window, except for time-outs: a request whose
// client gave up says nothing about the seats.
func (a *adaptive) rejected(t *ticket, _ time.Time, reason fairqueue.Reason) {
	if reason != fairqueue.ReasonTimeOut {
		t.lv.win.pressed = true
	}
}

func (a *adaptive) finished(t *ticket, now time.Time, sample bool) {
	start := t.r.StartTime()
	if !sample || start.UnixNano() < a.countFrom.Load() {
		return
	}
	t.lv.win.lat.add(now.Sub(start))
}

func (a *adaptive) between() { a.c.maybeRevise(a.c.clock.Now()) }

// maybeRevise revises the total if its time has come. Called without
// locks, after a request finished.
func (c *Controller) maybeRevise(now time.Time) {
	a := c.adapt
	next := a.next.Load()
	if now.UnixNano() < next || !a.next.CompareAndSwap(next, now.Add(a.interval).UnixNano()) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return
	}
	c.reviseLocked(now)
}

// reviseLocked runs the rule on the levels' windows and applies the total
// it returns. Called with c.mu held.
func (c *Controller) reviseLocked(now time.Time) {
	a := c.adapt
	levels := c.sortedLevels()
	in := make([]levelSample, len(levels))
	if cap(a.snap) < len(levels) {
		a.snap = make([]window, len(levels))
	}
	wins := a.snap[:len(levels)]
	for i, lv := range levels {
		lv.mu.Lock()
		wins[i] = lv.win
		n, limit := lv.qs.Counts(), lv.qcfg.ConcurrencyLimit
		lv.mu.Unlock()
		in[i] = levelSample{Name: lv.name, Exempt: lv.exempt, N: wins[i].lat.n, Low: wins[i].lat.lowMean(AdaptiveLatencyKept),
			Executing: n.SeatsInUse, Limit: limit, Pressed: wins[i].pressed || n.Waiting > 0}
	}
	g := 1.0
	if a.sched != nil {
		if p := a.sched(); p > a.schedTgt {
			g = math.Max(AdaptiveMinGradient, float64(a.schedTgt)/float64(p))
		}
	}
	floor := max(a.min, c.floorLocked())
	total, consumed := a.rule.step(now, floor, max(a.max, floor), in, g)
	if consumed {
		for i, lv := range levels {
			lv.mu.Lock()
			lv.win.lat.sub(&wins[i].lat)
			lv.win.pressed = false
			lv.mu.Unlock()
		}
		a.countFrom.Store(a.rule.countFrom.UnixNano())
	}
	if total != a.total {
		a.total = total
		c.planLocked(now, false, nil)
	}
}

// floorLocked is the smallest total at which every mandatory limited level
// (catch-all) keeps at least one seat, and at least the caller's Min.
// Called with c.mu held.
func (c *Controller) floorLocked() int {
	levels := c.sortedLevels()
	specs := make([]flowschema.PriorityLevelConfiguration, len(levels))
	for i, lv := range levels {
		specs[i] = lv.spec
	}
	for total := c.adapt.min; total < c.adapt.max; total++ {
		lims, err := seats.ComputeLimits(total, specs)
		if err != nil {
			return c.adapt.min
		}
		ok := true
		for _, l := range lims {
			if l.Name == flowschema.PriorityLevelNameCatchAll && !l.Exempt && l.MinCL < 1 {
				ok = false
			}
		}
		if ok {
			return total
		}
	}
	return c.adapt.max
}
