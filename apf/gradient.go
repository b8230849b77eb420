package apf

import (
	"math"
	"time"
)

// gradientRule is the adaptive total's rule, a pure state machine driven
// by step (see the package doc, "Adaptive total"). Not safe for
// concurrent use; the controller calls it with its lock held.
type gradientRule struct {
	MinSamples    int
	Tolerance     float64
	ProbeInterval time.Duration // < 0: probe only at start

	phase     adaptivePhase
	est       float64 // the total, before rounding
	settled   bool    // the probe's in-flight work has drained
	resume    float64 // the total to return to after a re-probe; 0: slow start
	nextProbe time.Time
	// countFrom: executions dispatched before it are not sampled (the
	// shell discards them).
	countFrom time.Time
	baselines map[string]time.Duration
}

type adaptivePhase int

const (
	phaseProbe     adaptivePhase = iota // at the floor, measuring baselines
	phaseSlowStart                      // growing fast until latency rises
	phaseSteady                         // the gradient rule
)

// levelSample is one level's window as step sees it.
type levelSample struct {
	Name   string
	Exempt bool
	// N executions finished in the window; Low is the mean of their
	// fastest AdaptiveLatencyKept (see latencySketch.lowMean).
	N   int
	Low time.Duration
	// Executing seats and the level's Limit, now.
	Executing, Limit int
	// Pressed: a request waited or was rejected in the window.
	Pressed bool
}

// start begins with a probe at floor.
func (g *gradientRule) start(now time.Time, floor int) {
	g.baselines = map[string]time.Duration{}
	g.beginProbe(now, float64(floor), 0)
}

func (g *gradientRule) beginProbe(now time.Time, floor, resume float64) {
	g.phase, g.est, g.settled, g.resume, g.countFrom = phaseProbe, floor, false, resume, now
}

// step revises the total at now from the levels' windows, within
// [floor, ceiling]. consumed reports that the windows were used (the
// caller starts new ones from countFrom); otherwise they keep
// accumulating. schedGradient (≤ 1) is the scheduler-latency signal's
// factor, 1 without it.
func (g *gradientRule) step(now time.Time, floor, ceiling int, in []levelSample, schedGradient float64) (total int, consumed bool) {
	n := 0
	for _, s := range in {
		n += s.N
	}
	switch {
	case g.phase == phaseProbe && !g.settled:
		g.est = float64(floor)
		if drained(in) {
			g.settled, g.countFrom, consumed = true, now, true
		}
	case g.phase == phaseProbe:
		g.est = float64(floor)
		if n >= g.MinSamples {
			g.endProbe(now, in)
			consumed = true
		}
	case n >= g.MinSamples:
		g.revise(in, schedGradient)
		consumed = true
		if g.ProbeInterval >= 0 && !now.Before(g.nextProbe) {
			g.beginProbe(now, float64(floor), g.est)
		}
	}
	g.est = math.Min(math.Max(g.est, float64(floor)), float64(ceiling))
	if g.phase == phaseProbe {
		g.est = float64(floor)
	}
	return int(math.Round(g.est)), consumed
}

// drained reports that no limited level executes more seats than its
// limit: the work admitted before the probe has left.
func drained(in []levelSample) bool {
	for _, s := range in {
		if !s.Exempt && s.Executing > s.Limit {
			return false
		}
	}
	return true
}

// endProbe takes each sampled level's Low as its baseline and
// resumes: in slow start after the first probe, else at the total before.
func (g *gradientRule) endProbe(now time.Time, in []levelSample) {
	for _, s := range in {
		if s.N > 0 {
			g.baselines[s.Name] = max(s.Low, 1)
		}
	}
	g.phase = phaseSteady
	if g.resume == 0 {
		g.phase = phaseSlowStart
	} else {
		g.est = g.resume
	}
	g.nextProbe = now.Add(g.ProbeInterval)
}

// ratio is the sample-weighted mean over levels of Low over the
// baseline. A level without a baseline takes its first Low as one; a
// baseline follows a lower Low down.
func (g *gradientRule) ratio(in []levelSample) float64 {
	var num, den float64
	for _, s := range in {
		if s.N == 0 {
			continue
		}
		low := max(s.Low, 1)
		base, ok := g.baselines[s.Name]
		if !ok || low < base {
			base = low
			g.baselines[s.Name] = base
		}
		num += float64(s.N) * float64(low) / float64(base)
		den += float64(s.N)
	}
	if den == 0 {
		return 1
	}
	return num / den
}

// revise is one revision out of the probe: slow start multiplies the
// total by AdaptiveSlowStartFactor while the latency stays within
// tolerance; then the total moves AdaptiveSmoothing of the way to
// total·gradient, plus headroom when the gradient is 1 and a level was
// short of seats.
func (g *gradientRule) revise(in []levelSample, schedGradient float64) {
	r := g.ratio(in)
	pressed := false
	for _, s := range in {
		pressed = pressed || (!s.Exempt && s.Pressed)
	}
	if g.phase == phaseSlowStart {
		if r <= g.Tolerance && schedGradient >= 1 {
			if pressed {
				g.est *= AdaptiveSlowStartFactor
			}
			return
		}
		g.phase = phaseSteady
	}
	grad := math.Min(1, math.Max(AdaptiveMinGradient, g.Tolerance/r))
	grad = math.Min(grad, schedGradient)
	next := g.est * grad
	if grad >= 1 && pressed {
		next += AdaptiveHeadroom * math.Sqrt(g.est)
	}
	g.est += AdaptiveSmoothing * (next - g.est)
}
