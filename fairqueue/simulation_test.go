package fairqueue

import (
	"container/heap"
	"math"
	"sort"
	"testing"
	"time"
)

// A small deterministic discrete-event driver for QueueSet, used to replay
// upstream's uniform-client fairness scenarios (queueset_test.go).

type simEvent struct {
	at  time.Time
	seq int
	fn  func(time.Time)
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type simulator struct {
	events simQueue
	seq    int
	now    time.Time
}

func (s *simulator) after(d time.Duration, fn func(time.Time)) {
	s.seq++
	heap.Push(&s.events, simEvent{at: s.now.Add(d), seq: s.seq, fn: fn})
}

// runUntil runs every event at or before lim, then sets the time to lim.
func (s *simulator) runUntil(lim time.Time) {
	for len(s.events) > 0 && !s.events[0].at.After(lim) {
		e := heap.Pop(&s.events).(simEvent)
		s.now = e.at
		e.fn(e.at)
	}
	s.now = lim
}

// uniformClient is upstream's: nThreads threads each making nCalls calls
// in a row, each executing for exec and followed by think. A split client
// holds back its upper half of threads until half the evaluation time has
// passed, and those threads make only nCalls/2 calls.
type uniformClient struct {
	hash         uint64
	nThreads     int
	nCalls       int
	exec, think  time.Duration
	initialSeats uint64
	finalSeats   uint64
	padding      time.Duration
	split        bool
}

func newUniformClient(hash uint64, nThreads, nCalls int, exec, think time.Duration) uniformClient {
	return uniformClient{hash: hash, nThreads: nThreads, nCalls: nCalls, exec: exec, think: think, initialSeats: 1, finalSeats: 1}
}

type uniformResult struct {
	averages      []float64 // time-average executing seats per client
	fair          []float64 // max-min fair allocation of the demands
	rejected      int
	epochAdvances int
	// firstHalf is set when some client is split: the averages and fair
	// shares over the first half of the evaluation time. averages and
	// fair then cover only the second half, as upstream's evaluation
	// restarts its integrators at the midpoint.
	firstHalf *uniformResult
}

// runUniform runs the scenario for evalDuration and returns each client's
// average executing seats, as upstream's uniformScenario.evalTo does.
func runUniform(t interface{ Fatal(...any) }, cfg Config, clients []uniformClient, evalDuration time.Duration) uniformResult {
	return runUniformDrain(t, cfg, clients, evalDuration, false)
}

// runUniformDrain is runUniform; with drain set it afterwards runs every
// client to its last call, as upstream's harness does before counting
// epoch advances.
func runUniformDrain(t interface{ Fatal(...any) }, cfg Config, clients []uniformClient, evalDuration time.Duration, drain bool) uniformResult {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sim := &simulator{now: start}
	qs, err := NewQueueSet(cfg, start)
	if err != nil {
		t.Fatal(err)
	}
	execSeats := make([]DemandStats, len(clients))
	for i := range execSeats {
		execSeats[i].Start(start, 0)
	}
	type call struct {
		client, thread, k int
		r                 Request
	}
	var res uniformResult
	var callK func(c *call)
	qs.SetDispatchFunc(func(r *Request) {
		c := r.Value.(*call)
		uc := clients[c.client]
		now := r.StartTime()
		es := &execSeats[c.client]
		es.Set(now, es.Value()+float64(uc.initialSeats))
		sim.after(uc.exec+uc.think, func(time.Time) {
			callK(&call{client: c.client, thread: c.thread, k: c.k + 1})
		})
		sim.after(uc.exec, func(now time.Time) {
			es.Set(now, es.Value()-float64(uc.initialSeats))
			if at, lingering := qs.Finish(now, &c.r); lingering {
				sim.after(at.Sub(now), func(now time.Time) { qs.Release(now, &c.r) })
			}
		})
	})
	callK = func(c *call) {
		uc := clients[c.client]
		if c.k >= uc.threadCalls(c.thread) {
			return
		}
		c.r.Value = c
		w := WorkEstimate{InitialSeats: uc.initialSeats, FinalSeats: uc.finalSeats, AdditionalLatency: uc.padding}
		if qs.Arrive(sim.now, &c.r, uc.hash, w) != "" {
			res.rejected++
		}
	}
	for i, uc := range clients {
		for j := 0; j < uc.nThreads; j++ {
			c := &call{client: i, thread: j}
			delay := time.Duration(90*j + 20*i)
			if uc.held(j) {
				delay += evalDuration / 2
			}
			sim.after(delay, func(time.Time) { callK(c) })
		}
	}
	// evalTo runs the scenario to lim and returns each client's average
	// executing seats since the previous evaluation, and the fair shares of
	// the demands of the threads started by then.
	evalTo := func(lim time.Time, last bool) (averages, fair []float64) {
		sim.runUntil(lim)
		averages = make([]float64, len(clients))
		demands := make([]float64, len(clients))
		for i, uc := range clients {
			averages[i] = execSeats[i].Reset(lim).Average
			threads := uc.nThreads
			if uc.split && !last {
				threads /= 2
			}
			demands[i] = float64(threads) * float64(uc.initialSeats) * float64(uc.exec) / float64(uc.think+uc.exec)
		}
		return averages, fairAlloc(demands, float64(cfg.ConcurrencyLimit))
	}
	for _, uc := range clients {
		if uc.split {
			res.firstHalf = &uniformResult{}
			res.firstHalf.averages, res.firstHalf.fair = evalTo(start.Add(evalDuration/2), false)
			break
		}
	}
	res.averages, res.fair = evalTo(start.Add(evalDuration), true)
	for drain && len(sim.events) > 0 {
		sim.runUntil(sim.events[0].at)
	}
	res.epochAdvances = qs.Counts().EpochAdvances
	if err := qs.verify(); err != nil {
		t.Fatal(err)
	}
	return res
}

// fairAlloc is the max-min fair (water-filling) division of capacity among
// the demands.
func fairAlloc(demands []float64, capacity float64) []float64 {
	idx := make([]int, len(demands))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return demands[idx[a]] < demands[idx[b]] })
	out := make([]float64, len(demands))
	left := capacity
	for n, i := range idx {
		share := left / float64(len(idx)-n)
		out[i] = math.Min(demands[i], share)
		left -= out[i]
	}
	return out
}

// jain returns Jain's fairness index of the allocations relative to their
// fair shares: 1 is perfectly fair, 1/n maximally unfair.
func jain(got, fair []float64) float64 {
	var s, s2 float64
	for i := range got {
		x := got[i] / fair[i]
		s += x
		s2 += x * x
	}
	return s * s / (float64(len(got)) * s2)
}

func checkFair(t *testing.T, name string, res uniformResult, margin float64) {
	t.Helper()
	for i := range res.averages {
		rel := (res.averages[i] - res.fair[i]) / res.fair[i]
		if math.Abs(rel) > margin {
			t.Errorf("%s: client %d averaged %.4f seats, fair share %.4f (off by %.2f%%, margin %.0f%%)", name, i, res.averages[i], res.fair[i], 100*rel, 100*margin)
		} else {
			t.Logf("%s: client %d averaged %.4f seats, fair share %.4f", name, i, res.averages[i], res.fair[i])
		}
	}
	if res.rejected != 0 {
		t.Errorf("%s: %d requests rejected, want none", name, res.rejected)
	}
}

// Upstream's TestUniformFlowsHandSize1.
func TestUniformFlowsHandSize1(t *testing.T) {
	res := runUniform(t, Config{Queues: 9, HandSize: 1, QueueLengthLimit: 8, ConcurrencyLimit: 4}, []uniformClient{
		newUniformClient(1001001001, 8, 20, time.Second, time.Second-1),
		newUniformClient(2002002002, 8, 20, time.Second, time.Second-1),
	}, 50*time.Second)
	checkFair(t, "TestUniformFlowsHandSize1", res, 0.01)
}

// Upstream's TestUniformFlowsHandSize3.
func TestUniformFlowsHandSize3(t *testing.T) {
	res := runUniform(t, Config{Queues: 8, HandSize: 3, QueueLengthLimit: 16, ConcurrencyLimit: 4}, []uniformClient{
		newUniformClient(400900100100, 8, 30, time.Second, time.Second-1),
		newUniformClient(300900200200, 8, 30, time.Second, time.Second-1),
	}, 60*time.Second)
	checkFair(t, "TestUniformFlowsHandSize3", res, 0.03)
}

// Upstream's TestDifferentFlowsExpectEqual.
func TestDifferentFlowsExpectEqual(t *testing.T) {
	res := runUniform(t, Config{Queues: 9, HandSize: 1, QueueLengthLimit: 8, ConcurrencyLimit: 4}, []uniformClient{
		newUniformClient(1001001001, 8, 20, time.Second, time.Second),
		newUniformClient(2002002002, 7, 30, time.Second, time.Second/2),
	}, 40*time.Second)
	checkFair(t, "TestDifferentFlowsExpectEqual", res, 0.01)
}

// Upstream's TestDifferentFlowsExpectUnequal: the demands (2 and 1) are
// below the fair shares, so each client gets what it asks for.
func TestDifferentFlowsExpectUnequal(t *testing.T) {
	res := runUniform(t, Config{Queues: 9, HandSize: 1, QueueLengthLimit: 6, ConcurrencyLimit: 3}, []uniformClient{
		newUniformClient(1001001001, 4, 20, time.Second, time.Second-1),
		newUniformClient(2002002002, 2, 20, time.Second, time.Second-1),
	}, 20*time.Second)
	checkFair(t, "TestDifferentFlowsExpectUnequal", res, 0.01)
}

func (uc uniformClient) width(seats uint64) uniformClient {
	uc.initialSeats = seats
	return uc
}

// splitHalf marks the client split (see uniformClient).
func (uc uniformClient) splitHalf() uniformClient {
	uc.split = true
	return uc
}

// held reports whether thread j of the client starts only at half time.
func (uc uniformClient) held(j int) bool {
	return uc.split && j >= uc.nThreads/2
}

// threadCalls returns how many calls thread j makes.
func (uc uniformClient) threadCalls(j int) int {
	if uc.held(j) {
		return uc.nCalls / 2
	}
	return uc.nCalls
}

// Upstream's TestDifferentWidths.
func TestDifferentWidths(t *testing.T) {
	res := runUniform(t, Config{Queues: 64, HandSize: 7, QueueLengthLimit: 13, ConcurrencyLimit: 6}, []uniformClient{
		newUniformClient(10010010010010, 13, 10, time.Second, time.Second-1),
		newUniformClient(20020020020020, 7, 10, time.Second, time.Second-1).width(2),
	}, 20*time.Second)
	checkFair(t, "TestDifferentWidths", res, 0.155)
}

// Upstream's TestTooWide: a client whose requests (7 seats) are wider than
// the limit (6) still gets its share, running alone.
func TestTooWide(t *testing.T) {
	res := runUniform(t, Config{Queues: 64, HandSize: 7, QueueLengthLimit: 35, ConcurrencyLimit: 6}, []uniformClient{
		newUniformClient(40040040040040, 15, 21, time.Second, time.Second-1).width(2),
		newUniformClient(50050050050050, 15, 21, time.Second, time.Second-1).width(2),
		newUniformClient(60060060060060, 15, 21, time.Second, time.Second-1).width(2),
		newUniformClient(70070070070070, 15, 21, time.Second, time.Second-1).width(2),
		newUniformClient(90090090090090, 15, 21, time.Second, time.Second-1).width(7),
	}, 400*time.Second)
	checkFair(t, "TestTooWide", res, 0.35)
}

// Upstream's TestSeatSecondsRollover: R overflows its range, and the epoch
// advances exactly 8 times without hurting fairness.
func TestSeatSecondsRollover(t *testing.T) {
	const quarter = 91 * 24 * time.Hour
	res := runUniformDrain(t, Config{Queues: 9, HandSize: 1, QueueLengthLimit: 8, ConcurrencyLimit: 2000}, []uniformClient{
		newUniformClient(1001001001, 8, 20, quarter, quarter).width(500),
		newUniformClient(2002002002, 7, 30, quarter, quarter/2).width(500),
	}, 40*quarter, true)
	checkFair(t, "TestSeatSecondsRollover", res, 0.01)
	if res.epochAdvances != 8 {
		t.Errorf("%d epoch advances, want 8 (as upstream)", res.epochAdvances)
	}
}

// Upstream's TestDifferentFlowsWithoutQueuing: with no queues there is no
// fairness, so the allocation is expected to be off by more than 20%.
func TestDifferentFlowsWithoutQueuing(t *testing.T) {
	res := runUniform(t, Config{Queues: 0, ConcurrencyLimit: 4}, []uniformClient{
		newUniformClient(1001001001, 6, 10, time.Second, 57*time.Millisecond),
		newUniformClient(2002002002, 4, 15, time.Second, 750*time.Millisecond),
	}, 13*time.Second)
	unfair := false
	for i := range res.averages {
		unfair = unfair || math.Abs(res.averages[i]-res.fair[i]) > 0.20*res.fair[i]
	}
	if !unfair {
		t.Errorf("averages %v within 20%% of fair shares %v, want some client off (no queuing)", res.averages, res.fair)
	}
}

// BenchmarkFairness runs upstream's uniform scenarios through the discrete
// event driver and reports Jain's index of the allocation relative to the
// max-min fair shares (1 = perfectly fair).
func BenchmarkFairness(b *testing.B) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		clients []uniformClient
		dur     time.Duration
	}{
		{"UniformFlowsHandSize1", Config{Queues: 9, HandSize: 1, QueueLengthLimit: 8, ConcurrencyLimit: 4}, []uniformClient{
			newUniformClient(1001001001, 8, 20, time.Second, time.Second-1),
			newUniformClient(2002002002, 8, 20, time.Second, time.Second-1)}, 50 * time.Second},
		{"DifferentFlowsExpectEqual", Config{Queues: 9, HandSize: 1, QueueLengthLimit: 8, ConcurrencyLimit: 4}, []uniformClient{
			newUniformClient(1001001001, 8, 20, time.Second, time.Second),
			newUniformClient(2002002002, 7, 30, time.Second, time.Second/2)}, 40 * time.Second},
		{"TooWide", Config{Queues: 64, HandSize: 7, QueueLengthLimit: 35, ConcurrencyLimit: 6}, []uniformClient{
			newUniformClient(40040040040040, 15, 21, time.Second, time.Second-1).width(2),
			newUniformClient(50050050050050, 15, 21, time.Second, time.Second-1).width(2),
			newUniformClient(60060060060060, 15, 21, time.Second, time.Second-1).width(2),
			newUniformClient(70070070070070, 15, 21, time.Second, time.Second-1).width(2),
			newUniformClient(90090090090090, 15, 21, time.Second, time.Second-1).width(7)}, 400 * time.Second},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var j float64
			for i := 0; i < b.N; i++ {
				res := runUniform(b, tc.cfg, tc.clients, tc.dur)
				j = jain(res.averages, res.fair)
			}
			b.ReportMetric(j, "jain")
		})
	}
}
