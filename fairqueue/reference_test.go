package fairqueue

import (
	"math"
	"slices"
	"time"

	"github.com/fairslice/fairslice/shufflesharding"
)

// refQueueSet is a deliberately plain port of upstream's queueset algorithm
// (v0.37.2): slices for FIFOs, a scan over all queues for the R ratio on
// every sync and for every dispatch. Tests drive it next to QueueSet and
// require identical decisions and state.
type refQueueSet struct {
	cfg        Config
	dealer     *shufflesharding.Dealer
	queues     []*refQueue
	r          SeatSeconds
	last       time.Time
	robin      int
	waiting    int
	executing  int
	seatsInUse int
	seatsWait  int
	enqueues   int
	rejected   int
	cancelled  int
	queueless  []*refReq
	dispatched []*refReq // since last drain
}

type refQueue struct {
	waiting       []*refReq
	executing     []*refReq
	nextDispatchR SeatSeconds
	index         int
	seatsInUse    int
}

type refReq struct {
	id        int
	work      WorkEstimate
	totalWork SeatSeconds
	finalWork SeatSeconds
	arrivalR  SeatSeconds
	start     time.Time
	q         *refQueue
	state     State
}

func (r *refReq) seats() int { return r.work.MaxSeats() }

func (q *refQueue) sums() (initial, maxSeats int, work SeatSeconds) {
	for _, r := range q.waiting {
		initial += int(r.work.InitialSeats)
		maxSeats += r.seats()
		work += r.totalWork
	}
	return
}

func newRef(cfg Config, now time.Time) *refQueueSet {
	rq := &refQueueSet{last: now}
	rq.configure(now, cfg)
	return rq
}

func (rq *refQueueSet) g() time.Duration { return rq.cfg.serviceDuration() }

func (rq *refQueueSet) configure(now time.Time, cfg Config) bool {
	dealer, err := cfg.validate()
	if err != nil {
		return false
	}
	rq.sync(now)
	if cfg.Queues > 0 {
		for len(rq.queues) < cfg.Queues {
			rq.queues = append(rq.queues, &refQueue{index: len(rq.queues)})
		}
	} else {
		cfg.HandSize = rq.cfg.HandSize
		cfg.QueueLengthLimit = rq.cfg.QueueLengthLimit
	}
	rq.cfg = cfg
	rq.dealer = dealer
	rq.dispatchAll(now)
	return true
}

func (rq *refQueueSet) sync(now time.Time) {
	dt := now.Sub(rq.last)
	rq.last = now
	active, requested := 0, 0
	for _, q := range rq.queues {
		_, m, _ := q.sums()
		requested += q.seatsInUse + m
		if len(q.waiting) > 0 || len(q.executing) > 0 {
			active++
		}
	}
	ratio := 0.0
	if active > 0 {
		ratio = math.Min(float64(requested), float64(rq.cfg.ConcurrencyLimit)) / float64(active)
	}
	prev := rq.r
	rq.r = prev + SeatsTimesDuration(ratio, dt)
	if prev > rq.r {
		return
	}
	if rq.r >= highR {
		rq.r -= rDecrement
		for _, q := range rq.queues {
			if len(q.waiting) == 0 && len(q.executing) == 0 {
				q.nextDispatchR = 0
				continue
			}
			q.nextDispatchR -= rDecrement
			for _, w := range q.waiting {
				w.arrivalR -= rDecrement
			}
		}
	}
}

func (rq *refQueueSet) fits(seats int) bool {
	if rq.cfg.Queues < 0 {
		return true
	}
	if seats > rq.cfg.ConcurrencyLimit {
		if rq.cfg.FixZeroLimitAdmission && rq.cfg.ConcurrencyLimit <= 0 {
			return false
		}
		return rq.executing == 0
	}
	return rq.seatsInUse+seats <= rq.cfg.ConcurrencyLimit
}

func (rq *refQueueSet) bound(q *refQueue) {
	if len(q.waiting) > 0 && q.nextDispatchR < q.waiting[0].arrivalR {
		q.nextDispatchR = q.waiting[0].arrivalR
	}
}

// arrive returns the reason ("" if accepted) and the chosen queue index (-1
// if none).
func (rq *refQueueSet) arrive(now time.Time, r *refReq, hash uint64, w WorkEstimate) (Reason, int) {
	rq.sync(now)
	g := rq.g()
	r.work = w
	r.finalWork = SeatsTimesDuration(float64(w.FinalSeats), w.AdditionalLatency)
	r.totalWork = SeatsTimesDuration(float64(w.InitialSeats), g) + r.finalWork
	r.arrivalR = rq.r
	if rq.cfg.Queues < 1 {
		if !rq.fits(r.seats()) {
			rq.rejected++
			r.state = StateRejected
			return ReasonConcurrencyLimit, -1
		}
		if rq.cfg.ClampFinalSeatsWithoutQueues && rq.cfg.Queues == 0 && rq.cfg.ConcurrencyLimit > 0 && r.work.FinalSeats > uint64(rq.cfg.ConcurrencyLimit) {
			rq.clamp(r)
		}
		r.start = now
		rq.executing++
		rq.seatsInUse += r.seats()
		rq.queueless = append(rq.queueless, r)
		r.state = StateExecuting
		rq.dispatched = append(rq.dispatched, r)
		return "", -1
	}
	hand := rq.dealer.DealIntoHand(hash, nil)
	offset := rq.enqueues % len(hand)
	rq.enqueues++
	best, bestWork := -1, MaxSeatSeconds
	for i := range hand {
		idx := hand[(offset+i)%len(hand)]
		if _, _, wk := rq.queues[idx].sums(); wk < bestWork {
			best, bestWork = idx, wk
		}
	}
	q := rq.queues[best]
	r.q = q
	if rq.seatsInUse >= rq.cfg.ConcurrencyLimit && len(q.waiting) >= rq.cfg.QueueLengthLimit {
		rq.bound(q)
		rq.rejected++
		r.state = StateRejected
		return ReasonQueueFull, best
	}
	if len(q.waiting) == 0 && len(q.executing) == 0 {
		q.nextDispatchR = rq.r
	}
	q.waiting = append(q.waiting, r)
	rq.waiting++
	rq.seatsWait += r.seats()
	r.state = StateWaiting
	rq.bound(q)
	rq.dispatchAll(now)
	return "", best
}

func (rq *refQueueSet) clamp(r *refReq) {
	fs := uint64(rq.cfg.ConcurrencyLimit)
	r.work.AdditionalLatency = r.finalWork.DurationPerSeat(float64(fs))
	r.work.FinalSeats = fs
}

func (rq *refQueueSet) dispatchAll(now time.Time) {
	for rq.waiting != 0 && rq.seatsInUse < rq.cfg.ConcurrencyLimit && rq.dispatchOne(now) {
	}
}

func (rq *refQueueSet) dispatchOne(now time.Time) bool {
	nq := len(rq.queues)
	var minQ *refQueue
	minIdx := 0
	minFinish := MaxSeatSeconds
	for range nq {
		rq.robin = (rq.robin + 1) % nq
		q := rq.queues[rq.robin]
		if len(q.waiting) == 0 {
			continue
		}
		if f := q.nextDispatchR + q.waiting[0].totalWork; f < minFinish {
			minFinish, minQ, minIdx = f, q, rq.robin
		}
	}
	if minQ == nil {
		return false // upstream would crash
	}
	r := minQ.waiting[0]
	if !rq.fits(r.seats()) {
		return false
	}
	minQ.waiting = minQ.waiting[1:]
	if r.work.FinalSeats > uint64(rq.cfg.ConcurrencyLimit) {
		rq.clamp(r)
	}
	rq.robin = minIdx
	rq.waiting--
	rq.seatsWait -= r.seats()
	r.start = now
	rq.executing++
	rq.seatsInUse += r.seats()
	minQ.executing = append(minQ.executing, r)
	minQ.seatsInUse += r.seats()
	minQ.nextDispatchR += r.totalWork
	rq.bound(minQ)
	r.state = StateExecuting
	rq.dispatched = append(rq.dispatched, r)
	return true
}

func removeRef(list []*refReq, r *refReq) []*refReq {
	for i, x := range list {
		if x == r {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	panic("refReq not found")
}

func (rq *refQueueSet) finish(now time.Time, r *refReq) (time.Time, bool) {
	rq.sync(now)
	rq.executing--
	if q := r.q; q != nil {
		q.executing = removeRef(q.executing, r)
		q.nextDispatchR -= SeatsTimesDuration(float64(r.work.InitialSeats), rq.g()-now.Sub(r.start))
		rq.bound(q)
	} else {
		rq.queueless = removeRef(rq.queueless, r)
	}
	var at time.Time
	lingering := r.work.AdditionalLatency > 0
	if lingering {
		r.state = StateLingering
		at = now.Add(r.work.AdditionalLatency)
	} else {
		r.state = StateDone
		rq.release(r)
	}
	rq.dispatchAll(now)
	return at, lingering
}

func (rq *refQueueSet) releaseLater(now time.Time, r *refReq) {
	rq.sync(now)
	r.state = StateDone
	rq.release(r)
	rq.dispatchAll(now)
}

func (rq *refQueueSet) release(r *refReq) {
	rq.seatsInUse -= r.seats()
	q := r.q
	if q == nil {
		return
	}
	q.seatsInUse -= r.seats()
	if len(rq.queues) > rq.cfg.Queues && len(q.waiting) == 0 && len(q.executing) == 0 {
		i := q.index
		if rq.cfg.FixStaleQueueRemoval {
			// By identity: a queue that is no longer in the set is not
			// removed again, and its stale index names nothing.
			i = slices.Index(rq.queues, q)
			if i < 0 {
				return
			}
		}
		if i >= len(rq.queues) {
			return
		}
		rq.queues = append(rq.queues[:i:i], rq.queues[i+1:]...)
		for j := i; j < len(rq.queues); j++ {
			rq.queues[j].index--
		}
		if rq.robin >= i {
			rq.robin--
		}
	}
}

// strandedWaiting is the number of waiting requests whose queue is no
// longer in the set (left there by a stale removal).
func (rq *refQueueSet) strandedWaiting() int {
	n := rq.waiting
	for _, q := range rq.queues {
		n -= len(q.waiting)
	}
	return n
}

func (rq *refQueueSet) cancel(now time.Time, r *refReq) bool {
	if r.state != StateWaiting {
		return false
	}
	rq.sync(now)
	q := r.q
	q.waiting = removeRef(q.waiting, r)
	rq.waiting--
	rq.seatsWait -= r.seats()
	rq.rejected++
	rq.cancelled++
	r.state = StateTimedOut
	rq.bound(q)
	return true
}
