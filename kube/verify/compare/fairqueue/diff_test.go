package fairqueuecompare

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/fairqueue/scenario"
	"github.com/fairslice/fairslice/kube/internal/upstream/upstreamqs"
	"github.com/fairslice/fairslice/shufflesharding"
)

var (
	diffSeed   = flag.Uint64("diff.seed", 0, "seed for TestDifferential (0: derive from the clock)")
	diffTraces = flag.Int("diff.traces", 500, "number of random traces in TestDifferential")
	diffSave   = flag.String("diff.save", "", "directory to save minimized mismatching scenarios into")
	// Comparing the state after every event costs about three times the
	// replay itself, and writing both dumps as text about as much again,
	// so by default only the first traces compare them.
	diffStateTraces = flag.Int("diff.statetraces", 200, "number of TestDifferential's traces (the first ones) that compare R, the robin index and every queue after every event")
	diffTextTraces  = flag.Int("diff.texttraces", 50, "number of TestDifferential's traces (the first ones) that also compare the dump text after every event")
)

// newOursEngine makes the engine compared with upstream; tests of the harness
// replace it with a deliberately broken one.
var newOursEngine = scenario.NewEngine

// run is one engine's replay of a scenario: the per-request results and
// the queue set's state after every event.
type run struct {
	results []scenario.Result
	steps   []step
}

// runBoth replays s through upstream's QueueSet and through fairqueue,
// comparing the dump text too.
func runBoth(s *scenario.Scenario) (up, ours run, err error) { return runBothText(s, true, true) }

// runBothText is runBoth with the state after every event recorded or not,
// and if so with the dump text or not.
func runBothText(s *scenario.Scenario, withState, withText bool) (up, ours run, err error) {
	var upRec, oursRec scenario.Engine = upstreamqs.New(), newOursEngine()
	if withState {
		upRec, oursRec = recordUpstream(withText), recordOurs(withText)
	}
	up.results, err = runGuarded(s, upRec)
	if err != nil {
		return up, ours, fmt.Errorf("upstream: %w", err)
	}
	ours.results, err = runGuarded(s, oursRec)
	if err != nil {
		return up, ours, fmt.Errorf("fairqueue: %w", err)
	}
	if withState {
		up.steps, ours.steps = upRec.(*recorder).steps, oursRec.(*recorder).steps
	}
	return up, ours, nil
}

// differ reports whether two replays differ in any request's result or in
// the state after any event.
func differ(up, ours run) bool {
	if firstDiff(up.results, ours.results) >= 0 {
		return true
	}
	i, _ := firstStateDiff(up.steps, ours.steps)
	return i >= 0
}

// runGuarded is scenario.Run with panics turned into errors, so that a
// crashing trace can be minimized and reported like any other.
func runGuarded(s *scenario.Scenario, e scenario.Engine) (res []scenario.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return scenario.Run(s, e)
}

// firstDiff returns the index of the first request whose results differ, or
// -1.
func firstDiff(up, ours []scenario.Result) int {
	for i := range up {
		if up[i] != ours[i] {
			return i
		}
	}
	return -1
}

// mismatches reports whether the two engines disagree on s (or either
// fails).
func mismatches(s *scenario.Scenario) bool {
	up, ours, err := runBoth(s)
	return err != nil || differ(up, ours)
}

// upstreamPanics reports whether upstream's QueueSet panics on s.
func upstreamPanics(s *scenario.Scenario) bool {
	_, err := runGuarded(s, upstreamqs.New())
	return err != nil && strings.HasPrefix(err.Error(), "panic:")
}

// minimize greedily removes reconfigurations and requests from s while
// bad(s) holds, then simplifies the remaining requests.
func minimize(s *scenario.Scenario, bad func(*scenario.Scenario) bool) *scenario.Scenario {
	cur := clone(s)
	for changed := true; changed; {
		changed = false
		for i := len(cur.Reconfigurations) - 1; i >= 0; i-- {
			c := clone(cur)
			c.Reconfigurations = slices.Delete(c.Reconfigurations, i, i+1)
			if bad(c) {
				cur, changed = c, true
			}
		}
		for i := len(cur.Requests) - 1; i >= 0; i-- {
			c := clone(cur)
			c.Requests = slices.Delete(c.Requests, i, i+1)
			if bad(c) {
				cur, changed = c, true
			}
		}
	}
	// Simplify fields one at a time.
	simplify := []func(r *scenario.Request){
		func(r *scenario.Request) { r.WaitLimit = 0 },
		func(r *scenario.Request) { r.FinalSeats, r.AdditionalLatency = 0, 0 },
		func(r *scenario.Request) { r.InitialSeats = 1 },
	}
	for i := range cur.Requests {
		for _, f := range simplify {
			c := clone(cur)
			f(&c.Requests[i])
			if bad(c) {
				cur = c
			}
		}
	}
	return cur
}

func clone(s *scenario.Scenario) *scenario.Scenario {
	return &scenario.Scenario{
		Config:           s.Config,
		Requests:         slices.Clone(s.Requests),
		Reconfigurations: slices.Clone(s.Reconfigurations),
	}
}

func scenarioText(s *scenario.Scenario) string {
	var b bytes.Buffer
	_ = scenario.Write(&b, s)
	return b.String()
}

// describe explains the first difference between the engines on s.
func describe(s *scenario.Scenario) string {
	up, ours, err := runBoth(s)
	if err != nil {
		return err.Error()
	}
	i := firstDiff(up.results, ours.results)
	if i < 0 {
		if j, why := firstStateDiff(up.steps, ours.steps); j >= 0 {
			return "every request's result is the same, but " + why
		}
		return "no difference"
	}
	u, o := up.results[i], ours.results[i]
	upJSON, _ := u.MarshalJSON()
	oursJSON, _ := o.MarshalJSON()
	return fmt.Sprintf("first differing request %d:\n  upstream:  %s (dispatch #%d)\n  fairqueue: %s (dispatch #%d)", i, upJSON, u.Order, oursJSON, o.Order)
}

// TestDifferential replays random traces through upstream's QueueSet and
// through fairqueue and requires identical results for every request
// (outcome, reason, queue, dispatch time and position in the dispatch
// order) and, after every event, the same R, robin index, next dispatch R
// and lengths of every queue, and text of the debug dump (setState).
func TestDifferential(t *testing.T) {
	seed := *diffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -diff.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	traces := *diffTraces
	if testing.Short() {
		traces = min(traces, 100)
	}
	var stats traceStats
	failures, panics := 0, 0
	for n := range traces {
		s := randomScenario(rng)
		up, ours, err := runBothText(s, n < *diffStateTraces, n < *diffTextTraces)
		if err != nil && strings.HasPrefix(err.Error(), "upstream: panic:") {
			// Upstream's stale-index queue removal (see doc.go) can drop a
			// queue that still holds waiting requests, after which its
			// dispatch loop dereferences a nil queue. There is no upstream
			// behaviour to compare with; fairqueue must merely survive.
			panics++
			if _, err := runGuarded(s, scenario.NewEngine()); err != nil {
				t.Errorf("trace %d: upstream panics, and fairqueue fails too: %v\n%s", n, err, scenarioText(s))
			}
			if panics == 1 && *diffSave != "" {
				min := minimize(s, upstreamPanics)
				name := filepath.Join(*diffSave, fmt.Sprintf("upstream-panic-%d-%d.json", seed, n))
				if err := os.WriteFile(name, []byte(scenarioText(min)), 0o644); err != nil {
					t.Error(err)
				}
			}
			continue
		}
		if err == nil {
			stats.add(s, up.results, up.steps)
			if !differ(up, ours) {
				continue
			}
		}
		failures++
		if failures > 3 {
			continue // count only
		}
		min := minimize(s, mismatches)
		text := scenarioText(min)
		t.Errorf("trace %d (seed %d) differs; minimized scenario (%d of %d requests):\n%s%s",
			n, seed, len(min.Requests), len(s.Requests), text, describe(min))
		if *diffSave != "" {
			name := filepath.Join(*diffSave, fmt.Sprintf("mismatch-%d-%d.json", seed, n))
			if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d traces differ", failures, traces)
	}
	t.Logf("%d traces (%d skipped: upstream panics): %s", traces, panics, stats)
	// The generator must exercise what the comparison is about.
	if traces >= 500 && failures == 0 {
		for what, n := range map[string]int{
			"queue-full rejections":        stats.queueFull,
			"concurrency-limit rejections": stats.concurrencyLimit,
			"time-outs":                    stats.timeOuts,
			"waiting dispatches":           stats.waited,
			"reconfigurations":             stats.reconfigurations,
			"wide requests":                stats.wide,
			"final-seat requests":          stats.final,
		} {
			if n == 0 {
				t.Errorf("random traces produced no %s", what)
			}
		}
	}
}

// TestDifferentialTestdata replays the scenarios in testdata/ (minimized
// past mismatches and hand-made cases) through both engines. Files named
// upstream-panic-*.json record scenarios on which upstream's QueueSet
// panics: the test requires that it still does (so the skip in
// TestDifferential stays justified) and that fairqueue does not.
func TestDifferentialTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenarios in testdata/")
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			s, err := scenario.Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(filepath.Base(name), "upstream-panic-") {
				if !upstreamPanics(s) {
					t.Errorf("upstream no longer panics on %s", name)
				}
				if _, err := runGuarded(s, scenario.NewEngine()); err != nil {
					t.Errorf("fairqueue fails on %s: %v", name, err)
				}
				return
			}
			if mismatches(s) {
				t.Errorf("engines differ on %s: %s", name, describe(s))
			}
		})
	}
}

type traceStats struct {
	requests, dispatched, waited, queueFull, concurrencyLimit, timeOuts int
	reconfigurations, wide, final, stuck                                int
	steps, epochTraces                                                  int
}

func (st *traceStats) add(s *scenario.Scenario, res []scenario.Result, steps []step) {
	st.steps += len(steps)
	for i := 1; i < len(steps); i++ {
		// R drops only at an epoch advance.
		if parseR(steps[i].State.R) < parseR(steps[i-1].State.R) {
			st.epochTraces++
			break
		}
	}
	st.reconfigurations += len(s.Reconfigurations)
	limit := s.Config.ConcurrencyLimit
	for i, r := range res {
		req := s.Requests[i]
		st.requests++
		if req.InitialSeats > limit || req.FinalSeats > limit {
			st.wide++
		}
		if req.FinalSeats > 0 && req.AdditionalLatency > 0 {
			st.final++
		}
		switch {
		case r.Outcome == scenario.OutcomeDispatched:
			st.dispatched++
			if r.DispatchedAt > req.Arrival {
				st.waited++
			}
		case r.Reason == scenario.ReasonQueueFull:
			st.queueFull++
		case r.Reason == scenario.ReasonConcurrencyLimit:
			st.concurrencyLimit++
		case r.Reason == scenario.ReasonTimeOut:
			st.timeOuts++
		default:
			st.stuck++
		}
	}
}

// parseR reads a SeatSeconds string such as "0.00300000ss".
func parseR(s string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSuffix(s, "ss"), 64)
	return f
}

func (st traceStats) String() string {
	return fmt.Sprintf("%d requests: %d dispatched (%d after waiting), %d queue-full, %d concurrency-limit, %d time-out, %d never dispatched; %d reconfigurations, %d wide, %d with final seats; state compared after %d events; %d traces with an epoch advance",
		st.requests, st.dispatched, st.waited, st.queueFull, st.concurrencyLimit, st.timeOuts, st.stuck, st.reconfigurations, st.wide, st.final, st.steps, st.epochTraces)
}

// randomConfig draws a configuration: queues 1..64 mostly, sometimes 0 (no
// queuing), -1 (exempt) or 65..512; a hand size valid for the deck; queue length
// limit 0..10; concurrency limit 1..10, rarely 0.
func randomConfig(rng *rand.Rand) scenario.Config {
	var c scenario.Config
	switch p := rng.IntN(100); {
	case p < 8:
		c.Queues = 0
	case p < 14:
		c.Queues = -1
	case p < 30:
		c.Queues = 1 + rng.IntN(4)
	case p < 95:
		c.Queues = 1 + rng.IntN(64)
	default:
		c.Queues = 65 + rng.IntN(448)
	}
	if c.Queues > 0 {
		var valid []int
		for h := 1; h <= min(c.Queues, 15); h++ {
			if shufflesharding.RequiredEntropyBits(c.Queues, h) <= shufflesharding.MaxHashBits {
				valid = append(valid, h)
			}
		}
		c.HandSize = valid[rng.IntN(len(valid))]
		c.QueueLengthLimit = rng.IntN(11)
	}
	c.ConcurrencyLimit = 1 + rng.IntN(10)
	if rng.IntN(40) == 0 {
		c.ConcurrencyLimit = 0
	}
	return c
}

// randomScenario draws a trace of 10..200 requests from a few flows, with
// arrivals on a coarse grid (so that many collide), wide requests, final
// seats, wait limits and 1..3 reconfigurations.
func randomScenario(rng *rand.Rand) *scenario.Scenario {
	s := &scenario.Scenario{Config: randomConfig(rng)}
	n := 10 + rng.IntN(191)
	flows := make([]uint64, 1+rng.IntN(12))
	for i := range flows {
		flows[i] = rng.Uint64()
		if rng.IntN(4) == 0 {
			flows[i] = uint64(rng.IntN(1000))
		}
	}
	grid := []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}[rng.IntN(3)]
	maxDur := 1 + rng.IntN(50) // in grid units
	span := 1 + rng.IntN(n*maxDur/4+1)
	widest := max(s.Config.ConcurrencyLimit, 1) + 2
	nrc := 1 + rng.IntN(3)
	for range nrc {
		c := randomConfig(rng)
		widest = max(widest, c.ConcurrencyLimit+2)
		s.Reconfigurations = append(s.Reconfigurations, scenario.Reconfiguration{
			At:     time.Duration(rng.IntN(span+maxDur)) * grid,
			Config: c,
		})
	}
	pWide := rng.IntN(30)
	pFinal := rng.IntN(40)
	pWait := rng.IntN(60)
	for i := range n {
		r := scenario.Request{
			ID:           fmt.Sprintf("r%d", i),
			Arrival:      time.Duration(rng.IntN(span)) * grid,
			Hash:         flows[rng.IntN(len(flows))],
			InitialSeats: 1,
			Duration:     time.Duration(rng.IntN(maxDur+1)) * grid,
		}
		if rng.IntN(100) < pWide {
			r.InitialSeats = 1 + rng.IntN(widest)
		}
		if rng.IntN(100) < pFinal {
			r.FinalSeats = rng.IntN(widest + 1)
			r.AdditionalLatency = time.Duration(rng.IntN(maxDur+1)) * grid
		}
		if rng.IntN(100) < pWait {
			r.WaitLimit = time.Duration(1+rng.IntN(2*maxDur)) * grid
		}
		s.Requests = append(s.Requests, r)
	}
	if rng.IntN(10) == 0 {
		exaggerate(rng, s)
	}
	if rng.IntN(3) == 0 {
		// Out-of-order input: the runner must sort by time, not file order.
		rng.Shuffle(len(s.Requests), func(i, j int) { s.Requests[i], s.Requests[j] = s.Requests[j], s.Requests[i] })
	}
	return s
}

// TestRandomScenarioRoundTrip checks that generated traces survive the file
// format, so that a printed failing scenario replays the same trace.
func TestRandomScenarioRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		s := randomScenario(rng)
		text := scenarioText(s)
		got, err := scenario.Parse(strings.NewReader(text))
		if err != nil {
			t.Fatalf("Parse(Write(s)) error %v\n%s", err, text)
		}
		if !slices.Equal(got.Requests, s.Requests) || !slices.Equal(got.Reconfigurations, s.Reconfigurations) || got.Config != s.Config {
			t.Fatalf("Parse(Write(s)) differs from s\n%s", text)
		}
	}
}

// exaggerate scales seats and concurrency limits up by the same factor (up
// to 2^16) and times by up to 2^16 as well, within the file format's
// limits, to reach the far corners of upstream's fixed-point arithmetic:
// large seat-second sums, long idle gaps, virtual-time epoch advances.
func exaggerate(rng *rand.Rand, s *scenario.Scenario) {
	seatK := 1 << rng.IntN(17)
	timeK := time.Duration(1 << rng.IntN(17))
	if rng.IntN(3) == 0 {
		// Both at the maximum: R then often passes the epoch threshold.
		seatK, timeK = 1<<16, 1<<16
	}
	scaleTime := func(d time.Duration) time.Duration { return min(d*timeK, scenario.MaxDuration) }
	scaleConfig := func(c *scenario.Config) {
		c.ConcurrencyLimit = min(c.ConcurrencyLimit*seatK, scenario.MaxConcurrencyLimit)
	}
	scaleConfig(&s.Config)
	for i := range s.Reconfigurations {
		rc := &s.Reconfigurations[i]
		scaleConfig(&rc.Config)
		rc.At = scaleTime(rc.At)
	}
	for i := range s.Requests {
		r := &s.Requests[i]
		r.InitialSeats = min(r.InitialSeats*seatK, scenario.MaxSeats)
		r.FinalSeats = min(r.FinalSeats*seatK, scenario.MaxSeats)
		r.Arrival = scaleTime(r.Arrival)
		r.Duration = scaleTime(r.Duration)
		r.AdditionalLatency = scaleTime(r.AdditionalLatency)
		r.WaitLimit = scaleTime(r.WaitLimit)
	}
}

// FuzzDifferential runs arbitrary (small) scenario files through both
// engines and requires identical results and the same state after every
// event (without the dump text), unless upstream panics.
func FuzzDifferential(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	more, _ := filepath.Glob("../../../tools/cmd/fairslice/testdata/simulate-*.json")
	for _, name := range append(files, more...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 5 {
		f.Add([]byte(scenarioText(randomScenario(rng))))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scenario.Parse(bytes.NewReader(data))
		if err != nil || len(s.Requests) > 300 || len(s.Reconfigurations) > 10 {
			return
		}
		for _, c := range append([]scenario.Config{s.Config}, configsOf(s)...) {
			if c.Queues > 512 || c.ConcurrencyLimit > 1000 {
				return
			}
		}
		// The structured state after every event, without the dump text.
		up, ours, err := runBothText(s, true, false)
		if err != nil && strings.HasPrefix(err.Error(), "upstream: panic:") {
			if _, err := runGuarded(s, scenario.NewEngine()); err != nil {
				t.Fatalf("upstream panics, and fairqueue fails too: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if differ(up, ours) {
			t.Fatalf("engines differ: %s\n%s", describe(s), scenarioText(s))
		}
	})
}

func configsOf(s *scenario.Scenario) []scenario.Config {
	var cs []scenario.Config
	for _, rc := range s.Reconfigurations {
		cs = append(cs, rc.Config)
	}
	return cs
}

// wideQueueBug misreports the queue of wide requests (InitialSeats > 1).
type wideQueueBug struct {
	scenario.Engine
	s *scenario.Scenario
}

// QueueSet implements scenario.Inspector, so that the states compare too.
func (e *wideQueueBug) QueueSet() *fairqueue.QueueSet {
	return e.Engine.(scenario.Inspector).QueueSet()
}

func (e *wideQueueBug) Start(s *scenario.Scenario, h scenario.Host) error {
	e.s = s
	return e.Engine.Start(s, h)
}

func (e *wideQueueBug) Arrive(now time.Duration, i int) scenario.Admission {
	a := e.Engine.Arrive(now, i)
	if a.Queue >= 0 && e.s.Requests[i].InitialSeats > 1 {
		a.Queue++
	}
	return a
}

// TestHarnessCatchesInjectedBug checks that the comparison and the
// minimizer work: with a broken engine, random traces must mismatch, and
// the minimized trace must be down to one wide request.
func TestHarnessCatchesInjectedBug(t *testing.T) {
	defer func(old func() scenario.Engine) { newOursEngine = old }(newOursEngine)
	newOursEngine = func() scenario.Engine { return &wideQueueBug{Engine: scenario.NewEngine()} }
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		s := randomScenario(rng)
		if upstreamPanics(s) || !mismatches(s) {
			continue
		}
		min := minimize(s, mismatches)
		if len(min.Requests) != 1 || min.Requests[0].InitialSeats <= 1 || !mismatches(min) {
			t.Fatalf("minimize left %d requests:\n%s", len(min.Requests), scenarioText(min))
		}
		if d := describe(min); !strings.Contains(d, "first differing request 0") {
			t.Errorf("describe = %q", d)
		}
		return
	}
	t.Fatal("no random trace exposed the injected bug")
}
