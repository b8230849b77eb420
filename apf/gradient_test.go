package apf

import (
	"testing"
	"time"
)

// gradientStep is one revision in a step table: the windows at At (from
// the start), and the total and consumption step must return.
type gradientStep struct {
	At        time.Duration
	In        []levelSample
	Sched     float64 // 0 means 1
	Total     int
	Consumed  bool
	PhaseWant adaptivePhase
}

// win is a window of n executions of d each at level name.
func win(name string, n int, d time.Duration, pressed bool) levelSample {
	return levelSample{Name: name, N: n, Low: d, Pressed: pressed}
}

// shrinking is steady steps 100 ms apart from at, each with latency 4x
// the 20 ms baseline, pressed, and the totals step must return.
func shrinking(at time.Duration, totals ...int) []gradientStep {
	var steps []gradientStep
	for i, total := range totals {
		steps = append(steps, gradientStep{At: at + time.Duration(i)*100*time.Millisecond,
			In: []levelSample{win("a", 10, 80*time.Millisecond, true)}, Total: total, Consumed: true, PhaseWant: phaseSteady})
	}
	return steps
}

func TestGradientRuleSteps(t *testing.T) {
	const ms = time.Millisecond
	drainedIn := []levelSample{{Name: "a", Executing: 1, Limit: 2}}
	busy := []levelSample{{Name: "a", Executing: 5, Limit: 2}}
	base := []levelSample{win("a", 10, 20*ms, true)}
	for _, tc := range []struct {
		name          string
		floor, ceil   int
		probeInterval time.Duration
		steps         []gradientStep
	}{
		{"probe waits for earlier work to drain, then for samples", 2, 100, -1, []gradientStep{
			{At: 100 * ms, In: busy, Total: 2, PhaseWant: phaseProbe},
			{At: 200 * ms, In: drainedIn, Total: 2, Consumed: true, PhaseWant: phaseProbe},
			{At: 300 * ms, In: []levelSample{win("a", 9, 20*ms, true)}, Total: 2, PhaseWant: phaseProbe},
			{At: 400 * ms, In: base, Total: 2, Consumed: true, PhaseWant: phaseSlowStart},
		}},
		{"slow start grows 4x while pressed and within tolerance, holds when not pressed", 2, 100, -1, []gradientStep{
			{At: 100 * ms, In: drainedIn, Total: 2, Consumed: true, PhaseWant: phaseProbe},
			{At: 200 * ms, In: base, Total: 2, Consumed: true, PhaseWant: phaseSlowStart},
			// 1.15x is within the tolerance (1.2)
			{At: 300 * ms, In: []levelSample{win("a", 10, 23*ms, true)}, Total: 8, Consumed: true, PhaseWant: phaseSlowStart},
			{At: 400 * ms, In: []levelSample{win("a", 10, 20*ms, false)}, Total: 8, Consumed: true, PhaseWant: phaseSlowStart},
			{At: 500 * ms, In: base, Total: 32, Consumed: true, PhaseWant: phaseSlowStart},
			// latency doubles: leave slow start; a quarter of the way to
			// 32·1.2/2: 28.8
			{At: 600 * ms, In: []levelSample{win("a", 10, 40*ms, true)}, Total: 29, Consumed: true, PhaseWant: phaseSteady},
			// latency at baseline and pressed: + 0.25·0.5·√28.8, 29.47
			{At: 700 * ms, In: base, Total: 29, Consumed: true, PhaseWant: phaseSteady},
			// within tolerance, not pressed: unchanged
			{At: 800 * ms, In: []levelSample{win("a", 10, 23*ms, false)}, Total: 29, Consumed: true, PhaseWant: phaseSteady},
			// too few samples: the window is extended
			{At: 900 * ms, In: []levelSample{win("a", 3, 80*ms, true)}, Total: 29, PhaseWant: phaseSteady},
			// latency 4x: a quarter of the way to half, 25.79
			{At: time.Second, In: []levelSample{win("a", 10, 80*ms, true)}, Total: 26, Consumed: true, PhaseWant: phaseSteady},
			// the scheduler signal alone shrinks: to 25.79·(1 − 0.25·0.4)
			{At: 1100 * ms, In: []levelSample{win("a", 10, 20*ms, true)}, Sched: 0.6, Total: 23, Consumed: true, PhaseWant: phaseSteady},
		}},
		{"the ceiling caps growth", 2, 6, -1, []gradientStep{
			{At: 100 * ms, In: drainedIn, Total: 2, Consumed: true},
			{At: 200 * ms, In: base, Total: 2, Consumed: true, PhaseWant: phaseSlowStart},
			{At: 300 * ms, In: base, Total: 6, Consumed: true, PhaseWant: phaseSlowStart},
			{At: 400 * ms, In: base, Total: 6, Consumed: true, PhaseWant: phaseSlowStart},
		}},
		{"the floor stops shrinking", 2, 100, -1, append([]gradientStep{
			{At: 100 * ms, In: drainedIn, Total: 2, Consumed: true},
			{At: 200 * ms, In: base, Total: 2, Consumed: true, PhaseWant: phaseSlowStart},
			{At: 300 * ms, In: base, Total: 8, Consumed: true, PhaseWant: phaseSlowStart},
			// 8·(1 − 0.25·0.5)^k: 7, 6.13, 5.36, 4.69, 4.10, 3.59, 3.14, 2.75, 2.41, 2.10, then the floor
			{At: 400 * ms, In: []levelSample{win("a", 10, 80*ms, true)}, Total: 7, Consumed: true, PhaseWant: phaseSteady},
		}, shrinking(500*ms, 6, 5, 5, 4, 4, 3, 3, 2, 2, 2, 2)...)},
		{"levels are weighted by samples; a new level's first signal is its baseline", 1, 100, -1, []gradientStep{
			{At: 100 * ms, In: drainedIn, Total: 1, Consumed: true},
			{At: 200 * ms, In: base, Total: 1, Consumed: true, PhaseWant: phaseSlowStart},
			{At: 300 * ms, In: base, Total: 4, Consumed: true, PhaseWant: phaseSlowStart},
			{At: 400 * ms, In: base, Total: 16, Consumed: true, PhaseWant: phaseSlowStart},
			// a: 30 at 3x, b (new, 500 ms each): 10 at 1x → ratio 2.5;
			// a quarter of the way to half: 14
			{At: 500 * ms, In: []levelSample{win("a", 30, 60*ms, true), win("b", 10, 500*ms, true)}, Total: 14, Consumed: true, PhaseWant: phaseSteady},
		}},
		{"re-probe at the floor, then resume at the total before", 1, 100, time.Second, []gradientStep{
			{At: 100 * ms, In: drainedIn, Total: 1, Consumed: true},
			{At: 200 * ms, In: base, Total: 1, Consumed: true, PhaseWant: phaseSlowStart},
			{At: 300 * ms, In: base, Total: 4, Consumed: true, PhaseWant: phaseSlowStart},
			{At: 400 * ms, In: base, Total: 16, Consumed: true, PhaseWant: phaseSlowStart},
			// grows to 64, then probes
			{At: 1200 * ms, In: base, Total: 1, Consumed: true, PhaseWant: phaseProbe},
			{At: 1300 * ms, In: drainedIn, Total: 1, Consumed: true, PhaseWant: phaseProbe},
			// the new baseline is 40 ms: latency 40 ms afterwards is 1x
			{At: 1400 * ms, In: []levelSample{win("a", 10, 40*ms, false)}, Total: 64, Consumed: true, PhaseWant: phaseSteady},
			{At: 1500 * ms, In: []levelSample{win("a", 10, 40*ms, false)}, Total: 64, Consumed: true, PhaseWant: phaseSteady},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1_800_000_000, 0)
			g := gradientRule{MinSamples: 10, Tolerance: DefaultAdaptiveTolerance, ProbeInterval: tc.probeInterval}
			g.start(start, tc.floor)
			for i, s := range tc.steps {
				sched := s.Sched
				if sched == 0 {
					sched = 1
				}
				total, consumed := g.step(start.Add(s.At), tc.floor, tc.ceil, s.In, sched)
				if total != s.Total || consumed != s.Consumed || g.phase != s.PhaseWant {
					t.Fatalf("step %d at %v: step() = %d, %v (phase %d), want %d, %v (phase %d)",
						i, s.At, total, consumed, g.phase, s.Total, s.Consumed, s.PhaseWant)
				}
			}
		})
	}
}

func TestHistogramQuantile(t *testing.T) {
	buckets := []float64{0, 0.001, 0.002, 0.004}
	for _, tc := range []struct {
		counts []uint64
		q      float64
		want   time.Duration
	}{
		{[]uint64{0, 0, 0}, 0.99, 0},
		{[]uint64{100, 0, 0}, 0.99, time.Millisecond},
		{[]uint64{98, 1, 1}, 0.99, 2 * time.Millisecond},
		{[]uint64{98, 0, 2}, 0.99, 4 * time.Millisecond},
	} {
		var total uint64
		for _, c := range tc.counts {
			total += c
		}
		if got := histogramQuantile(tc.counts, buckets, total, tc.q); got != tc.want {
			t.Errorf("histogramQuantile(%v, q=%v) = %v, want %v", tc.counts, tc.q, got, tc.want)
		}
	}
}
