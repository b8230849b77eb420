package fairqueue

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// anyWork draws a work estimate from the whole domain of its types,
// weighted towards the edges: 0 seats, the maximum, values that wrap when
// converted to int, negative and huge latencies.
func anyWork(t *rapid.T) WorkEstimate {
	seats := rapid.OneOf(
		rapid.Uint64Range(0, 3),
		rapid.SampledFrom([]uint64{MaxWorkSeats - 1, MaxWorkSeats, MaxWorkSeats + 1, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64}),
		rapid.Uint64(),
	)
	latency := rapid.OneOf(
		rapid.Int64Range(-2, 5_000_000),
		rapid.SampledFrom([]int64{math.MinInt64, -1, int64(MaxAdditionalLatency), int64(MaxAdditionalLatency) + 1, math.MaxInt64}),
		rapid.Int64(),
	)
	return WorkEstimate{
		InitialSeats:      seats.Draw(t, "initialSeats"),
		FinalSeats:        seats.Draw(t, "finalSeats"),
		AdditionalLatency: time.Duration(latency.Draw(t, "latency")),
	}
}

// TestCountsNeverNegative feeds the core arbitrary work estimates, hashes,
// configurations and call sequences and requires, after every call, that
// no count is negative, that the seats in use are exactly the seats of the
// requests holding them (a plain sum over the requests), that the seats
// waiting are at least those of the waiting requests (more only by
// upstream's clamp drift), and that the internal invariants hold.
func TestCountsNeverNegative(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := t0
		cfg := genConfig(t, "")
		qs, err := NewQueueSet(cfg, now)
		if err != nil {
			t.Skip("invalid config")
		}
		var reqs []*Request
		pick := func(t *rapid.T, s State) *Request {
			var c []*Request
			for _, r := range reqs {
				if r.state == s {
					c = append(c, r)
				}
			}
			if len(c) == 0 {
				t.Skip("no candidate")
			}
			return rapid.SampledFrom(c).Draw(t, "req")
		}
		t.Repeat(map[string]func(*rapid.T){
			"arrive": func(t *rapid.T) {
				r := new(Request)
				reqs = append(reqs, r)
				qs.Arrive(now, r, rapid.Uint64().Draw(t, "hash"), anyWork(t))
			},
			"finish":  func(t *rapid.T) { qs.Finish(now, pick(t, StateExecuting)) },
			"release": func(t *rapid.T) { qs.Release(now, pick(t, StateLingering)) },
			"cancel":  func(t *rapid.T) { qs.Cancel(now, pick(t, StateWaiting)) },
			"expire":  func(t *rapid.T) { qs.Expire(now, pick(t, StateWaiting)) },
			"advance": func(t *rapid.T) {
				now = now.Add(time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "dt")))
			},
			"reconfigure": func(t *rapid.T) {
				_ = qs.Reconfigure(now, genConfig(t, "new"))
			},
			"": func(t *rapid.T) {
				c := qs.Counts()
				for name, v := range map[string]int{
					"Waiting": c.Waiting, "Executing": c.Executing, "SeatsInUse": c.SeatsInUse,
					"SeatsWaiting": c.SeatsWaiting, "Dispatched": c.Dispatched, "Rejected": c.Rejected,
					"TimedOut": c.TimedOut, "Cancelled": c.Cancelled, "WaitLimitExpired": c.WaitLimitExpired,
					"CallerCancelled": c.CallerCancelled, "EpochAdvances": c.EpochAdvances,
					"ActiveQueues": c.ActiveQueues, "Queues": c.Queues,
				} {
					if v < 0 {
						t.Fatalf("Counts().%s = %d", name, v)
					}
				}
				held, waitingSeats := 0, 0
				for _, r := range reqs {
					switch r.state {
					case StateExecuting, StateLingering:
						held += r.Work().MaxSeats()
					case StateWaiting:
						waitingSeats += r.Work().MaxSeats()
					}
				}
				if c.SeatsInUse != held {
					t.Fatalf("SeatsInUse = %d, the requests hold %d", c.SeatsInUse, held)
				}
				if c.SeatsWaiting < waitingSeats {
					t.Fatalf("SeatsWaiting = %d, the waiting requests need %d", c.SeatsWaiting, waitingSeats)
				}
				if c.Cancelled != c.WaitLimitExpired+c.CallerCancelled || c.Rejected < c.Cancelled {
					t.Fatalf("Counts() = %+v: Cancelled is not split by cause", c)
				}
				for _, q := range qs.Dump().Queues {
					if q.SeatsInUse < 0 || q.InitialSeatsSum < 0 || q.MaxSeatsSum < 0 {
						t.Fatalf("queue %d: %+v", q.Index, q)
					}
				}
				if err := qs.verify(); err != nil {
					t.Fatalf("verify: %v", err)
				}
			},
		})
	})
}
