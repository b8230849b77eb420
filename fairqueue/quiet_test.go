package fairqueue

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// quietFlowWaits simulates, in virtual time through the core, the setting
// of BenchmarkLimiterNoisyNeighbour: 8 seats, service 15–25 ms, one noisy
// flow of 32 closed-loop clients and 4 quiet flows of one client each with
// 20–40 ms of think time, over 64 queues with the given hand size and G.
// It returns the quiet requests' waits (arrival to dispatch) in
// milliseconds, sorted, after one second of warm-up.
func quietFlowWaits(t *testing.T, hand int, g time.Duration) []float64 {
	start := time.Unix(0, 0)
	sim := &simulator{now: start}
	qs, err := NewQueueSet(Config{Queues: 64, HandSize: hand, QueueLengthLimit: 100, ConcurrencyLimit: 8, ServiceDuration: g}, start)
	if err != nil {
		t.Fatal(err)
	}
	const noisy, quiet = 32, 4
	rng := rand.New(rand.NewPCG(1, 2))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
	reqs := make([]Request, noisy+quiet)
	var waits []float64
	var arrive func(c int)
	qs.SetDispatchFunc(func(r *Request) {
		c := r.Value.(int)
		if c >= noisy && r.StartTime().Sub(start) > time.Second {
			waits = append(waits, float64(r.StartTime().Sub(r.ArrivalTime()))/1e6)
		}
		sim.after(between(15*time.Millisecond, 25*time.Millisecond), func(now time.Time) {
			qs.Finish(now, r)
			think := time.Duration(0)
			if c >= noisy {
				think = between(20*time.Millisecond, 40*time.Millisecond)
			}
			sim.after(think, func(time.Time) { arrive(c) })
		})
	})
	arrive = func(c int) {
		hash := uint64(12345) // the noisy flow
		if c >= noisy {
			hash = uint64(c)
		}
		qs.Arrive(sim.now, &reqs[c], hash, WorkEstimate{InitialSeats: 1})
	}
	for c := range reqs {
		reqs[c].Value = c
		sim.after(between(0, 20*time.Millisecond), func(time.Time) { arrive(c) })
	}
	sim.runUntil(start.Add(30 * time.Second))
	slices.Sort(waits)
	return waits
}

// TestQuietFlowWait backs the package doc's account of what a quiet flow
// waits next to a noisy one: the quiet request's virtual start is the
// current R, the noisy flow's backlogged queues (up to HandSize of them)
// have heads whose virtual finish is no later, so it waits for up to
// HandSize dispatches, one per freed seat: about HandSize × service time /
// ConcurrencyLimit at worst, one service time here with a hand of 8 and 8
// seats, and less with a smaller hand.
func TestQuietFlowWait(t *testing.T) {
	pct := func(ws []float64, p float64) float64 { return ws[int(p*float64(len(ws)-1))] }
	h8, h2, g20 := quietFlowWaits(t, 8, 0), quietFlowWaits(t, 2, 0), quietFlowWaits(t, 8, 20*time.Millisecond)
	t.Logf("quiet wait p50/p90/max in ms: hand 8: %.1f/%.1f/%.1f; hand 2: %.1f/%.1f/%.1f; hand 8 with G=20ms: %.1f/%.1f/%.1f",
		pct(h8, .5), pct(h8, .9), pct(h8, 1), pct(h2, .5), pct(h2, .9), pct(h2, 1), pct(g20, .5), pct(g20, .9), pct(g20, 1))
	if p := pct(h8, 0.9); p > 20 {
		t.Errorf("hand 8: quiet wait p90 %.1f ms, want at most one service time (20 ms)", p)
	}
	if a, b := pct(h2, 0.5), pct(h8, 0.5); a >= b {
		t.Errorf("quiet wait p50 with hand 2 (%.1f ms) not below that with hand 8 (%.1f ms)", a, b)
	}
	if p := pct(h2, 0.9); p > 20.0*3/8 {
		t.Errorf("hand 2: quiet wait p90 %.1f ms, want at most (hand+1) × 20 ms / 8 seats", p)
	}
}
