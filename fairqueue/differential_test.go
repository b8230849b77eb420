package fairqueue

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func genConfig(t *rapid.T, label string) Config {
	queues := rapid.IntRange(-1, 12).Draw(t, label+"queues")
	hand := 1
	if queues > 0 {
		hand = rapid.IntRange(1, min(queues, 4)).Draw(t, label+"hand")
	}
	return Config{
		Name:                         "pl",
		Queues:                       queues,
		HandSize:                     hand,
		QueueLengthLimit:             rapid.IntRange(0, 5).Draw(t, label+"qll"),
		ConcurrencyLimit:             rapid.IntRange(0, 8).Draw(t, label+"cl"),
		FixZeroLimitAdmission:        rapid.Bool().Draw(t, label+"fixZero"),
		ClampFinalSeatsWithoutQueues: rapid.Bool().Draw(t, label+"clampNoQueue"),
		FixStaleQueueRemoval:         rapid.Bool().Draw(t, label+"fixStale"),
	}
}

// diffHarness drives a QueueSet and the reference port with the same calls.
type diffHarness struct {
	qs    *QueueSet
	ref   *refQueueSet
	now   time.Time
	ours  []*Request
	refs  []*refReq
	got   []int
	flows []uint64
	ends  []int // times each request ended
	works []WorkEstimate

	// fixedThroughout is whether every configuration so far had
	// FixStaleQueueRemoval; stranded is the number of waiting requests
	// stranded in removed queues at the last check.
	fixedThroughout bool
	stranded        int
}

// checkStranded asserts that FixStaleQueueRemoval strands nothing: while it
// is set, no more waiting requests end up in removed queues, and if it was
// set all along, none ever do.
func (h *diffHarness) checkStranded() error {
	n := h.qs.strandedWaiting()
	defer func() { h.stranded = n }()
	if !h.qs.cfg.FixStaleQueueRemoval {
		return nil
	}
	if n > h.stranded {
		return fmt.Errorf("%d waiting requests stranded in removed queues with FixStaleQueueRemoval, %d before", n, h.stranded)
	}
	if h.fixedThroughout && n != 0 {
		return fmt.Errorf("%d waiting requests stranded in removed queues with FixStaleQueueRemoval always set", n)
	}
	return nil
}

func (h *diffHarness) compareDispatches(t *rapid.T, what string) {
	want := make([]int, 0, len(h.ref.dispatched))
	for _, r := range h.ref.dispatched {
		want = append(want, r.id)
	}
	h.ref.dispatched = h.ref.dispatched[:0]
	if !slices.Equal(h.got, want) {
		t.Fatalf("%s: dispatched %v, reference dispatched %v", what, h.got, want)
	}
	h.got = h.got[:0]
}

func ids(l *reqList) []int {
	var out []int
	for r := l.head; r != nil; r = r.next {
		out = append(out, r.Value.(int))
	}
	return out
}

func refIDs(l []*refReq) []int {
	var out []int
	for _, r := range l {
		out = append(out, r.id)
	}
	return out
}

func (h *diffHarness) compareState() error {
	qs, ref := h.qs, h.ref
	if qs.currentR != ref.r {
		return fmt.Errorf("R = %v, reference %v", qs.currentR, ref.r)
	}
	if qs.robinIndex != ref.robin {
		return fmt.Errorf("robinIndex = %d, reference %d", qs.robinIndex, ref.robin)
	}
	if len(qs.queues) != len(ref.queues) {
		return fmt.Errorf("%d queues, reference %d", len(qs.queues), len(ref.queues))
	}
	c := qs.Counts()
	if c.Waiting != ref.waiting || c.Executing != ref.executing || c.SeatsInUse != ref.seatsInUse ||
		c.SeatsWaiting != ref.seatsWait || c.Rejected != ref.rejected || c.Cancelled != ref.cancelled {
		return fmt.Errorf("counts %+v, reference waiting %d executing %d seats %d/%d rejected %d cancelled %d",
			c, ref.waiting, ref.executing, ref.seatsInUse, ref.seatsWait, ref.rejected, ref.cancelled)
	}
	for i, q := range qs.queues {
		rq := ref.queues[i]
		if q.nextDispatchR != rq.nextDispatchR || q.seatsInUse != rq.seatsInUse {
			return fmt.Errorf("queue %d: nextDispatchR %v seats %d, reference %v %d", i, q.nextDispatchR, q.seatsInUse, rq.nextDispatchR, rq.seatsInUse)
		}
		if a, b := ids(&q.waiting), refIDs(rq.waiting); !slices.Equal(a, b) {
			return fmt.Errorf("queue %d: waiting %v, reference %v", i, a, b)
		}
		if a, b := ids(&q.executing), refIDs(rq.executing); !slices.Equal(a, b) {
			return fmt.Errorf("queue %d: executing %v, reference %v", i, a, b)
		}
	}
	if a, b := ids(&qs.queueless), refIDs(ref.queueless); !slices.Equal(a, b) {
		return fmt.Errorf("queueless %v, reference %v", a, b)
	}
	if a, b := qs.strandedWaiting(), ref.strandedWaiting(); a != b {
		return fmt.Errorf("%d waiting requests stranded in removed queues, reference %d", a, b)
	}
	return nil
}

func pickInState(t *rapid.T, h *diffHarness, label string, states ...State) int {
	var cands []int
	for i, r := range h.ours {
		if slices.Contains(states, r.state) {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		t.Skip("no candidate")
	}
	return rapid.SampledFrom(cands).Draw(t, label)
}

func (h *diffHarness) ended(t *rapid.T, id int) {
	h.ends[id]++
	if h.ends[id] > 1 {
		t.Fatalf("request %d ended %d times", id, h.ends[id])
	}
}

// TestQueueSetMatchesReference drives QueueSet and a plain port of upstream's
// algorithm with the same random operations and requires the same
// decisions, the same dispatch order and the same state after every step,
// plus QueueSet's invariants.
func TestQueueSetMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t, "")
		start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
		qs, err := NewQueueSet(cfg, start)
		if err != nil {
			t.Skip("invalid config")
		}
		h := &diffHarness{qs: qs, ref: newRef(cfg, start), now: start, fixedThroughout: cfg.FixStaleQueueRemoval}
		h.flows = rapid.SliceOfN(rapid.Uint64(), 1, 10).Draw(t, "flows")
		qs.SetDispatchFunc(func(r *Request) {
			h.got = append(h.got, r.Value.(int))
			c := qs.cfg
			// The wide-request rule looks at the seats asked for, before
			// the final-seats clamp.
			if c.Queues >= 0 && qs.totSeatsInUse > c.ConcurrencyLimit && !(h.works[r.Value.(int)].MaxSeats() > c.ConcurrencyLimit && qs.totExecuting == 1) {
				t.Fatalf("dispatch of %d leaves %d seats in use over limit %d with %d executing", r.Value.(int), qs.totSeatsInUse, c.ConcurrencyLimit, qs.totExecuting)
			}
		})
		t.Repeat(map[string]func(*rapid.T){
			"arrive": func(t *rapid.T) {
				var hash uint64
				if rapid.IntRange(0, 4).Draw(t, "fresh") == 0 {
					hash = rapid.Uint64().Draw(t, "hash")
				} else {
					hash = rapid.SampledFrom(h.flows).Draw(t, "flow")
				}
				cl := h.qs.cfg.ConcurrencyLimit
				w := WorkEstimate{InitialSeats: uint64(rapid.IntRange(1, 2).Draw(t, "initial"))}
				if rapid.IntRange(0, 5).Draw(t, "wide") == 0 {
					w.InitialSeats = uint64(rapid.IntRange(0, cl+3).Draw(t, "wideInitial"))
				}
				if rapid.IntRange(0, 3).Draw(t, "hasFinal") == 0 {
					w.FinalSeats = uint64(rapid.IntRange(0, cl+3).Draw(t, "final"))
					w.AdditionalLatency = time.Duration(rapid.Int64Range(0, 20e6).Draw(t, "latency"))
				}
				id := len(h.ours)
				r := &Request{Value: id}
				rr := &refReq{id: id}
				h.ours = append(h.ours, r)
				h.refs = append(h.refs, rr)
				h.ends = append(h.ends, 0)
				h.works = append(h.works, w)
				reason := h.qs.Arrive(h.now, r, hash, w)
				wantReason, wantQueue := h.ref.arrive(h.now, rr, hash, w)
				if reason != wantReason || r.Queue() != wantQueue { // for queue-full too: the queue that was full
					t.Fatalf("Arrive(%d, %x, %+v) = %q queue %d, reference %q queue %d", id, hash, w, reason, r.Queue(), wantReason, wantQueue)
				}
				if reason != "" {
					h.ended(t, id)
				}
				h.compareDispatches(t, "arrive")
			},
			"finish": func(t *rapid.T) {
				i := pickInState(t, h, "executing", StateExecuting)
				at, lingering := h.qs.Finish(h.now, h.ours[i])
				wantAt, wantLingering := h.ref.finish(h.now, h.refs[i])
				if at != wantAt || lingering != wantLingering {
					t.Fatalf("Finish(%d) = %v, %v; reference %v, %v", i, at, lingering, wantAt, wantLingering)
				}
				if !lingering {
					h.ended(t, i)
				}
				h.compareDispatches(t, "finish")
			},
			"release": func(t *rapid.T) {
				i := pickInState(t, h, "lingering", StateLingering)
				h.qs.Release(h.now, h.ours[i])
				h.ref.releaseLater(h.now, h.refs[i])
				h.ended(t, i)
				h.compareDispatches(t, "release")
			},
			"cancel": func(t *rapid.T) {
				i := pickInState(t, h, "cancellable", StateWaiting, StateExecuting, StateDone)
				got := h.qs.Cancel(h.now, h.ours[i])
				want := h.ref.cancel(h.now, h.refs[i])
				if got != want {
					t.Fatalf("Cancel(%d) = %v, reference %v", i, got, want)
				}
				if got {
					h.ended(t, i)
				}
				h.compareDispatches(t, "cancel")
			},
			"advance": func(t *rapid.T) {
				h.now = h.now.Add(time.Duration(rapid.Int64Range(0, 10e6).Draw(t, "dt")))
			},
			"reconfigure": func(t *rapid.T) {
				c := genConfig(t, "re")
				// Keep the stale-removal fix as it was more often than not,
				// so that long runs with it set all along are common.
				if rapid.IntRange(0, 3).Draw(t, "toggleFixStale") != 0 {
					c.FixStaleQueueRemoval = h.qs.cfg.FixStaleQueueRemoval
				}
				err := h.qs.Reconfigure(h.now, c)
				ok := h.ref.configure(h.now, c)
				if (err == nil) != ok {
					t.Fatalf("Reconfigure(%+v) = %v, reference ok=%v", c, err, ok)
				}
				if err == nil && !c.FixStaleQueueRemoval {
					h.fixedThroughout = false
				}
				h.compareDispatches(t, "reconfigure")
			},
			"nearEpoch": func(t *rapid.T) {
				if rapid.IntRange(0, 9).Draw(t, "rare") != 0 {
					t.Skip("rare")
				}
				r := highR - SeatSeconds(rapid.Uint64Range(0, 1e6).Draw(t, "gap"))
				h.qs.currentR, h.ref.r = r, r
			},
			"": func(t *rapid.T) {
				if err := h.qs.verify(); err != nil {
					t.Fatalf("verify: %v", err)
				}
				if err := h.checkStranded(); err != nil {
					t.Fatal(err)
				}
				if err := h.compareState(); err != nil {
					t.Fatal(err)
				}
			},
		})
		// Drain: every request must end exactly once.
		for {
			progressed := false
			for i, r := range h.ours {
				switch r.state {
				case StateWaiting:
					h.qs.Cancel(h.now, r)
					h.ref.cancel(h.now, h.refs[i])
					h.ended(t, i)
					progressed = true
				case StateExecuting:
					if _, l := h.qs.Finish(h.now, r); !l {
						h.ended(t, i)
					}
					h.ref.finish(h.now, h.refs[i])
					progressed = true
				case StateLingering:
					h.qs.Release(h.now, r)
					h.ref.releaseLater(h.now, h.refs[i])
					h.ended(t, i)
					progressed = true
				}
			}
			h.compareDispatches(t, "drain")
			if !progressed {
				break
			}
		}
		if c := h.qs.Counts(); c.Waiting != 0 || c.Executing != 0 || c.SeatsInUse != 0 {
			t.Fatalf("not drained: %+v", c)
		}
		for i, n := range h.ends {
			if n != 1 {
				t.Fatalf("request %d (state %v) ended %d times", i, h.ours[i].state, n)
			}
		}
		if err := h.qs.verify(); err != nil {
			t.Fatalf("verify after drain: %v", err)
		}
	})
}

// TestFixStaleQueueRemovalStrandsNothing drives a QueueSet with
// FixStaleQueueRemoval set through attrition-heavy operations (few queues,
// frequent final phases, queue counts cut and raised) and requires that no
// waiting request ever sits in a removed queue, and that finishing and
// releasing everything, without cancelling, dispatches every waiting
// request.
func TestFixStaleQueueRemovalStrandsNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{
			Queues:               rapid.IntRange(2, 4).Draw(t, "queues"),
			HandSize:             1,
			QueueLengthLimit:     10,
			ConcurrencyLimit:     rapid.IntRange(1, 3).Draw(t, "cl"),
			FixStaleQueueRemoval: true,
		}
		now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
		qs, err := NewQueueSet(cfg, now)
		if err != nil {
			t.Fatal(err)
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
				w := WorkEstimate{InitialSeats: uint64(rapid.IntRange(1, 2).Draw(t, "initial"))}
				if rapid.Bool().Draw(t, "hasFinal") {
					w.FinalSeats = uint64(rapid.IntRange(1, 2).Draw(t, "final"))
					w.AdditionalLatency = time.Duration(rapid.IntRange(1, 5).Draw(t, "latency")) * time.Millisecond
				}
				r := new(Request)
				reqs = append(reqs, r)
				qs.Arrive(now, r, uint64(rapid.IntRange(0, 7).Draw(t, "hash")), w)
			},
			"finish":  func(t *rapid.T) { qs.Finish(now, pick(t, StateExecuting)) },
			"release": func(t *rapid.T) { qs.Release(now, pick(t, StateLingering)) },
			"cancel":  func(t *rapid.T) { qs.Cancel(now, pick(t, StateWaiting)) },
			"advance": func(t *rapid.T) {
				now = now.Add(time.Duration(rapid.IntRange(0, 5).Draw(t, "dt")) * time.Millisecond)
			},
			"reconfigure": func(t *rapid.T) {
				cfg.Queues = rapid.IntRange(1, 4).Draw(t, "newQueues")
				if err := qs.Reconfigure(now, cfg); err != nil {
					t.Fatal(err)
				}
			},
			"": func(t *rapid.T) {
				if err := qs.verify(); err != nil {
					t.Fatalf("verify: %v", err)
				}
				if n := qs.strandedWaiting(); n != 0 {
					t.Fatalf("%d waiting requests stranded in removed queues", n)
				}
			},
		})
		for progressed := true; progressed; {
			progressed = false
			for _, r := range reqs {
				switch r.state {
				case StateExecuting:
					qs.Finish(now, r)
					progressed = true
				case StateLingering:
					qs.Release(now, r)
					progressed = true
				}
			}
		}
		if c := qs.Counts(); c.Waiting != 0 || c.SeatsInUse != 0 {
			t.Fatalf("after finishing everything: %+v, want nothing waiting or in use", c)
		}
	})
}
