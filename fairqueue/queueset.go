package fairqueue

import (
	"math"
	"time"

	"github.com/fairslice/fairslice/shufflesharding"
)

// Epoch constants, as upstream: when R reaches highR, rDecrement is
// subtracted from R and from every reading taken from it.
const (
	rDecrement = MaxSeatSeconds / 2
	highR      = rDecrement + rDecrement/2
)

// queue is one FIFO of waiting requests plus what it has executing.
type queue struct {
	waiting   reqList
	executing reqList

	// Sums over the waiting requests.
	initialSeatsSum int
	maxSeatsSum     int
	totalWorkSum    SeatSeconds

	nextDispatchR SeatSeconds
	seatsInUse    int // seats held by requests dispatched from here, final phases included

	// index is the position in QueueSet.queues. A removed queue keeps its
	// last index, as upstream's does.
	index int
	// attached is false once the queue has been removed from the set.
	attached bool
}

func (q *queue) active() bool { return q.waiting.n > 0 || q.executing.n > 0 }

// QueueSet is the deterministic core of the fair-queuing dispatcher for one
// priority level: it makes the same decisions as upstream's queueset
// (k8s.io/apiserver v0.37.2) for the same sequence of calls and times.
//
// Every method that changes state takes the current time; the QueueSet
// never reads a clock and starts no goroutines or timers. R, the virtual
// clock, advances at each such call, so calls must carry non-decreasing
// times, and the times at which it is called matter (they are the instants
// at which upstream takes its lock).
//
// Dispatches are reported, in order, through the function set by
// SetDispatchFunc (called synchronously, possibly several times per call),
// and through Request.State.
//
// Cost: Arrive, Finish, Release and Cancel are O(handSize + d·log Q) for Q
// queues and d dispatches; nothing scans all queues except Reconfigure
// adding queues, the removal of a surplus queue, and the rare epoch advance.
// A request that dispatches at once or waits costs no allocations.
//
// A QueueSet is not safe for concurrent use; Limiter wraps one for servers.
type QueueSet struct {
	cfg      Config
	g        time.Duration
	unitWork SeatSeconds // work of one seat for G
	dealer   *shufflesharding.Dealer
	hand     []int

	queues []*queue
	index  dispatchIndex

	currentR     SeatSeconds
	lastRealTime time.Time
	robinIndex   int

	totWaiting, totExecuting       int
	totSeatsInUse, totSeatsWaiting int
	enqueues                       int
	handOffset                     int // enqueues % HandSize, kept without dividing

	dispatched, rejected, timedOut, cancelled int
	expired, callerCancelled                  int
	epochAdvances                             int

	queueless reqList

	// deferred is the queue whose dispatch index leaf is stale, or nil.
	deferred *queue

	// Kept incrementally over attached queues: Σ(seatsInUse + maxSeatsSum)
	// and the number of queues with waiting or executing requests.
	seatsRequested int
	activeQueues   int

	demand DemandStats
	// demandLag is lastRealTime − the demand's last update: the demand is
	// integrated only when the seats change and when it is read, as
	// upstream's integrator, whose breakpoints decide its float rounding.
	demandLag  time.Duration
	observer   Observer
	onDispatch func(*Request)
}

// NewQueueSet returns a QueueSet for cfg whose virtual clock starts at now.
// It returns an error, listing every problem, if cfg is invalid.
func NewQueueSet(cfg Config, now time.Time) (*QueueSet, error) {
	dealer, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	qs := &QueueSet{cfg: cfg, lastRealTime: now}
	qs.demand.Start(now, 0)
	qs.index.reset(0)
	qs.apply(now, cfg, dealer)
	return qs, nil
}

// SetDispatchFunc sets the function called, synchronously and in dispatch
// order, for every request that starts executing (from a queue or without
// one). fn must not call back into the QueueSet. nil removes it.
func (qs *QueueSet) SetDispatchFunc(fn func(*Request)) { qs.onDispatch = fn }

// SetObserver sets the observer called synchronously on events; nil removes it.
func (qs *QueueSet) SetObserver(o Observer) { qs.observer = o }

// Config returns the configuration in effect (with HandSize and
// QueueLengthLimit carried over when Queues ≤ 0).
func (qs *QueueSet) Config() Config { return qs.cfg }

// Reconfigure validates cfg and, if valid, applies it at now: more queues
// are added at once; surplus queues are removed one by one as they become
// empty; a lower ConcurrencyLimit preempts nothing. Requests that may now
// fit are dispatched. On error the QueueSet is unchanged.
func (qs *QueueSet) Reconfigure(now time.Time, cfg Config) error {
	dealer, err := cfg.validate()
	if err != nil {
		return err
	}
	qs.apply(now, cfg, dealer)
	return nil
}

func (qs *QueueSet) apply(now time.Time, cfg Config, dealer *shufflesharding.Dealer) {
	qs.syncTime(now)
	if cfg.Queues > 0 {
		if n := len(qs.queues); cfg.Queues > n {
			for i := n; i < cfg.Queues; i++ {
				qs.queues = append(qs.queues, &queue{index: i, attached: true})
			}
			qs.reindex()
		}
		if cap(qs.hand) < cfg.HandSize {
			qs.hand = make([]int, cfg.HandSize)
		}
		qs.handOffset = qs.enqueues % cfg.HandSize
	} else {
		cfg.QueueLengthLimit = qs.cfg.QueueLengthLimit
		cfg.HandSize = qs.cfg.HandSize
	}
	qs.cfg = cfg
	qs.g = cfg.serviceDuration()
	qs.unitWork = SeatsTimesDuration(1, qs.g)
	qs.dealer = dealer
	qs.dispatchAll(now)
}

// Arrive handles the arrival of r at now, with the flow hash and work
// estimate given. It returns "" if r was accepted, in which case r is
// waiting or executing (see r.State and r.Queue), or the reason it was
// rejected. Requests dispatched as a consequence, r or others, are reported
// to the dispatch function before Arrive returns.
//
// r must be new or ended; Arrive panics if r is waiting, executing or
// lingering. It sets r.Hash to hash. In queuing mode the arrival always
// consumes one step of the hand rotation, even when rejected, as upstream.
//
// The core accepts any work estimate without error, and its counts stay
// consistent (never negative) whatever is passed: seat counts above
// MaxWorkSeats are lowered to it and a negative AdditionalLatency is raised
// to 0 (r.Work reports the values used); InitialSeats 0 is kept, as
// upstream keeps it, so such a request holds no seat (it always fits, and
// in queuing mode it is dispatched whenever a seat is free); an
// AdditionalLatency above MaxAdditionalLatency is used as given. Use
// WorkEstimate.Validate (as Limiter does) to reject such estimates.
func (qs *QueueSet) Arrive(now time.Time, r *Request, hash uint64, work WorkEstimate) Reason {
	switch r.state {
	case StateWaiting, StateExecuting, StateLingering:
		panic("fairqueue: Arrive called with a request that has not ended")
	}
	qs.syncTime(now)
	qs.resetForArrival(now, r, hash, work)
	if qs.cfg.Queues < 1 {
		return qs.arriveWithoutQueue(now, r)
	}
	q := qs.queues[qs.shuffleShard(hash)]
	r.queue = q
	if qs.totSeatsInUse >= qs.cfg.ConcurrencyLimit && q.waiting.n >= qs.cfg.QueueLengthLimit {
		qs.bound(q)
		qs.rekey(q)
		return qs.reject(r, ReasonQueueFull)
	}
	qs.enqueue(now, r, q)
	qs.dispatchAfterArrival(now, q)
	return ""
}

// resetForArrival sets r's fields for an arrival at now: hash, the
// normalized work estimate and its work in seat-seconds, arrival time and R.
func (qs *QueueSet) resetForArrival(now time.Time, r *Request, hash uint64, work WorkEstimate) {
	r.qs, r.queue, r.prev, r.next = qs, nil, nil, nil
	r.Hash = hash
	work = work.normalized()
	r.work = work
	r.finalWork = 0
	if work.FinalSeats != 0 && work.AdditionalLatency != 0 {
		r.finalWork = SeatsTimesDuration(float64(work.FinalSeats), work.AdditionalLatency)
	}
	if work.InitialSeats == 1 {
		r.totalWork = qs.unitWork + r.finalWork
	} else {
		r.totalWork = SeatsTimesDuration(float64(work.InitialSeats), qs.g) + r.finalWork
	}
	r.arrivalTime, r.startTime = now, time.Time{}
	r.arrivalR = qs.currentR
	r.reason = ""
}

// arriveWithoutQueue is Arrive in no-queuing and exempt modes: r executes
// at once if its seats fit, else it is rejected.
func (qs *QueueSet) arriveWithoutQueue(now time.Time, r *Request) Reason {
	if !qs.canAccommodate(r.maxSeats()) {
		return qs.reject(r, ReasonConcurrencyLimit)
	}
	if qs.cfg.ClampFinalSeatsWithoutQueues && qs.cfg.Queues == 0 && qs.cfg.ConcurrencyLimit > 0 && r.work.FinalSeats > uint64(qs.cfg.ConcurrencyLimit) {
		qs.clampFinalSeats(r)
	}
	r.startTime = now
	qs.totExecuting++
	qs.totSeatsInUse += r.maxSeats()
	qs.queueless.pushBack(r)
	r.state = StateExecuting
	qs.seatsChanged(now)
	qs.started(r, now, now)
	return ""
}

// enqueue appends r to q's waiting requests and updates the sums.
func (qs *QueueSet) enqueue(now time.Time, r *Request, q *queue) {
	wasActive := q.active()
	if !wasActive {
		q.nextDispatchR = qs.currentR
	}
	q.waiting.pushBack(r)
	seats := r.maxSeats()
	q.initialSeatsSum += int(r.work.InitialSeats)
	q.maxSeatsSum += seats
	q.totalWorkSum += r.totalWork
	qs.seatsRequested += seats
	qs.totWaiting++
	qs.totSeatsWaiting += seats
	r.state = StateWaiting
	qs.seatsChanged(now)
	if qs.observer != nil {
		qs.observer.Enqueued(r.info(), q.waiting.n)
	}
	qs.bound(q)
	qs.noteActivity(q, wasActive)
}

// dispatchAfterArrival dispatches what an arrival in q allows, keeping the
// dispatch index up to date.
func (qs *QueueSet) dispatchAfterArrival(now time.Time, q *queue) {
	if qs.totWaiting == 1 && qs.totSeatsInUse < qs.cfg.ConcurrencyLimit && q.finishR() != MaxSeatSeconds {
		// The new request is the only waiting one, so upstream's scan can
		// only pick its queue: skip the index (the common immediate
		// dispatch).
		if !qs.dispatchFrom(now, q) {
			qs.rekey(q)
		}
		return
	}
	if qs.totWaiting == 1 {
		// The new request is the only waiting one but does not go at once
		// (the seats are full): defer its index update, which the next
		// dispatch will most likely make unnecessary.
		qs.deferKey(q)
	} else {
		qs.rekey(q)
	}
	qs.dispatchAll(now)
}

func (qs *QueueSet) reject(r *Request, reason Reason) Reason {
	qs.rejected++
	r.state, r.reason = StateRejected, reason
	if qs.observer != nil {
		qs.observer.Rejected(r.info(), reason)
	}
	return reason
}

// shuffleShard deals the hand for hash and returns the queue with the least
// waiting work, visiting the hand from a rotating offset.
func (qs *QueueSet) shuffleShard(hash uint64) int {
	hand := qs.dealer.DealIntoHand(hash, qs.hand)
	n := len(hand)
	offset := qs.handOffset
	qs.enqueues++
	if qs.handOffset++; qs.handOffset == n {
		qs.handOffset = 0
	}
	best, bestWork := hand[offset], MaxSeatSeconds
	for i := 0; i < n; i++ {
		j := offset + i
		if j >= n {
			j -= n
		}
		idx := hand[j]
		if w := qs.queues[idx].totalWorkSum; w < bestWork {
			best, bestWork = idx, w
		}
	}
	return best
}

// Finish records that executing request r finished at now, then dispatches
// what fits. If r has final seats (AdditionalLatency > 0 after any clamp),
// they stay held: Finish returns the time at which they are due to be
// released and lingering true, and the caller must call Release(at, r) at
// that time. Otherwise r is done and lingering is false.
//
// Finish panics if r is not executing.
func (qs *QueueSet) Finish(now time.Time, r *Request) (releaseAt time.Time, lingering bool) {
	if r.state != StateExecuting || r.qs != qs {
		panic("fairqueue: Finish called with a request that is not executing")
	}
	qs.syncTime(now)
	qs.totExecuting--
	if q := r.queue; q != nil {
		wasActive := q.active()
		q.executing.remove(r)
		q.nextDispatchR -= SeatsTimesDuration(float64(r.work.InitialSeats), qs.g-now.Sub(r.startTime))
		qs.bound(q)
		qs.rekey(q)
		qs.noteActivity(q, wasActive)
	} else {
		qs.queueless.remove(r)
	}
	if r.work.AdditionalLatency <= 0 {
		r.state = StateDone
		qs.releaseSeats(now, r)
	} else {
		r.state = StateLingering
		releaseAt, lingering = now.Add(r.work.AdditionalLatency), true
	}
	qs.dispatchAll(now)
	return releaseAt, lingering
}

// Release releases the final seats of lingering request r at now and
// dispatches what fits. Call it at the time Finish returned. It panics if r
// is not lingering.
func (qs *QueueSet) Release(now time.Time, r *Request) {
	if r.state != StateLingering || r.qs != qs {
		panic("fairqueue: Release called with a request that is not lingering")
	}
	qs.syncTime(now)
	r.state = StateDone
	qs.releaseSeats(now, r)
	qs.dispatchAll(now)
}

// Cancel removes waiting request r from its queue at now because its
// caller gave up, ending it with ReasonTimeOut, and reports true. It counts
// in Counts.CallerCancelled (and, as upstream, in Cancelled and Rejected).
// It does not dispatch (upstream does not either). If r is not waiting
// (already dispatched, or ended), Cancel does nothing, not even advance R,
// and reports false: the caller then treats r as admitted, as upstream
// does.
func (qs *QueueSet) Cancel(now time.Time, r *Request) bool {
	return qs.remove(now, r, false)
}

// Expire is Cancel for a request whose wait limit passed: the same removal,
// counted in Counts.WaitLimitExpired instead of CallerCancelled, and
// reported to the Observer with expired true.
func (qs *QueueSet) Expire(now time.Time, r *Request) bool {
	return qs.remove(now, r, true)
}

func (qs *QueueSet) remove(now time.Time, r *Request, expired bool) bool {
	if r.state != StateWaiting || r.qs != qs {
		return false
	}
	qs.syncTime(now)
	q := r.queue
	wasActive := q.active()
	seats := r.maxSeats()
	q.waiting.remove(r)
	q.initialSeatsSum -= int(r.work.InitialSeats)
	q.maxSeatsSum -= seats
	q.totalWorkSum -= r.totalWork
	if q.attached {
		qs.seatsRequested -= seats
	}
	qs.totWaiting--
	qs.totSeatsWaiting -= seats
	qs.rejected++
	qs.cancelled++
	if expired {
		qs.expired++
	} else {
		qs.callerCancelled++
	}
	r.state, r.reason = StateTimedOut, ReasonTimeOut
	if qs.observer != nil {
		qs.observer.Cancelled(r.info(), expired)
	}
	qs.seatsChanged(now)
	qs.bound(q)
	qs.rekey(q)
	qs.noteActivity(q, wasActive)
	return true
}

// IsIdle reports whether no request is waiting or executing (final phases
// do not count, as upstream).
func (qs *QueueSet) IsIdle() bool { return qs.totWaiting == 0 && qs.totExecuting == 0 }

// Counts is a snapshot of a QueueSet's totals.
//
// Rejected, TimedOut and Cancelled are upstream's totals (its Dump's and
// debug endpoints'), kept for compatibility: a request removed from its
// queue counts in both Rejected and Cancelled, whatever the cause.
// WaitLimitExpired and CallerCancelled split Cancelled by cause, so that
// Rejected − Cancelled is the number of requests turned away on arrival.
type Counts struct {
	Waiting, Executing       int // requests
	SeatsInUse, SeatsWaiting int
	Dispatched               int // requests that started executing, with or without a queue
	Rejected                 int // rejections on arrival plus removals from a queue (upstream's total)
	TimedOut                 int // always 0, as upstream's: removals count in Cancelled
	Cancelled                int // removals from a queue: WaitLimitExpired + CallerCancelled (upstream's total)
	WaitLimitExpired         int // removals by Expire: the request's wait limit passed
	CallerCancelled          int // removals by Cancel: the caller gave up (or closed the Limiter)
	EpochAdvances            int
	ActiveQueues             int // queues with waiting or executing requests
	Queues                   int // current number of queues, surplus ones included
}

// Counts returns the current totals.
func (qs *QueueSet) Counts() Counts {
	return Counts{
		Waiting: qs.totWaiting, Executing: qs.totExecuting,
		SeatsInUse: qs.totSeatsInUse, SeatsWaiting: qs.totSeatsWaiting,
		Dispatched: qs.dispatched, Rejected: qs.rejected, TimedOut: qs.timedOut, Cancelled: qs.cancelled,
		WaitLimitExpired: qs.expired, CallerCancelled: qs.callerCancelled,
		EpochAdvances: qs.epochAdvances, ActiveQueues: qs.activeQueues, Queues: len(qs.queues),
	}
}

// VirtualTime returns R as of the last call that took a time.
func (qs *QueueSet) VirtualTime() SeatSeconds { return qs.currentR }

// Demand returns the seat-demand statistics (seats in use plus seats
// waiting, time-weighted) integrated up to now.
func (qs *QueueSet) Demand(now time.Time) DemandResults {
	res := qs.demand.Results(now)
	qs.demandLag = qs.lastRealTime.Sub(now)
	return res
}

// ResetDemand returns Demand(now) and restarts the integration at now.
func (qs *QueueSet) ResetDemand(now time.Time) DemandResults {
	res := qs.demand.Reset(now)
	qs.demandLag = qs.lastRealTime.Sub(now)
	return res
}

// syncTime advances R to now at the rate min(seats requested, limit)/active
// queues, and advances the epoch if R got too large.
func (qs *QueueSet) syncTime(now time.Time) {
	if now == qs.lastRealTime {
		// The same reading again: no time passed (a cheap exact test).
		if qs.currentR >= highR {
			qs.advanceEpoch()
		}
		return
	}
	dt := now.Sub(qs.lastRealTime)
	qs.lastRealTime = now
	prev := qs.currentR
	if dt != 0 {
		qs.currentR = prev + SeatsTimesDuration(qs.ratio(), dt)
		qs.demandLag += dt
	}
	if prev <= qs.currentR && qs.currentR >= highR {
		qs.advanceEpoch()
	}
}

func (qs *QueueSet) ratio() float64 {
	if qs.activeQueues == 0 {
		return 0
	}
	return math.Min(float64(qs.seatsRequested), float64(qs.cfg.ConcurrencyLimit)) / float64(qs.activeQueues)
}

func (qs *QueueSet) advanceEpoch() {
	qs.currentR -= rDecrement
	qs.epochAdvances++
	for _, q := range qs.queues {
		if !q.active() {
			q.nextDispatchR = 0
			continue
		}
		q.nextDispatchR -= rDecrement
		for r := q.waiting.head; r != nil; r = r.next {
			r.arrivalR -= rDecrement
		}
	}
	qs.reindex()
}

// reindex rebuilds the dispatch index from scratch (O(queues)).
func (qs *QueueSet) reindex() {
	qs.deferred = nil
	qs.index.reset(len(qs.queues))
	for i, q := range qs.queues {
		qs.index.setLeaf(i, q.finishR())
	}
	qs.index.rebuild()
}

// finishR is the virtual finish time of q's head, or MaxSeatSeconds.
func (q *queue) finishR() SeatSeconds {
	if h := q.waiting.head; h != nil {
		return q.nextDispatchR + h.totalWork
	}
	return MaxSeatSeconds
}

func (qs *QueueSet) rekey(q *queue) {
	if q == qs.deferred {
		qs.deferred = nil
	}
	if q.attached {
		qs.index.set(q.index, q.finishR())
	}
}

// deferKey marks q's index leaf as stale instead of updating it. At most one
// leaf is stale at a time; the tree is a consistent min-tree over the
// leaves, so other leaves can change meanwhile, but it must not be searched
// before flushKey.
func (qs *QueueSet) deferKey(q *queue) {
	qs.flushKey()
	qs.deferred = q
}

// flushKey brings the deferred leaf, if any, up to date.
func (qs *QueueSet) flushKey() {
	if q := qs.deferred; q != nil {
		qs.rekey(q)
	}
}

func (qs *QueueSet) noteActivity(q *queue, wasActive bool) {
	if !q.attached {
		return
	}
	if a := q.active(); a != wasActive {
		if a {
			qs.activeQueues++
		} else {
			qs.activeQueues--
		}
	}
}

// bound is upstream's anti-windup rule: a queue's next dispatch in virtual
// time does not precede the arrival of its oldest waiting request.
func (qs *QueueSet) bound(q *queue) {
	if h := q.waiting.head; h != nil && q.nextDispatchR < h.arrivalR {
		q.nextDispatchR = h.arrivalR
	}
}

func (qs *QueueSet) canAccommodate(seats int) bool {
	switch {
	case qs.cfg.Queues < 0:
		return true
	case seats > qs.cfg.ConcurrencyLimit:
		if qs.cfg.FixZeroLimitAdmission && qs.cfg.ConcurrencyLimit <= 0 {
			return false
		}
		// The wide-request rule: a request wider than the limit runs alone.
		return qs.totExecuting == 0
	case qs.totSeatsInUse+seats > qs.cfg.ConcurrencyLimit:
		return false
	}
	return true
}

func (qs *QueueSet) dispatchAll(now time.Time) {
	for qs.totWaiting != 0 && qs.totSeatsInUse < qs.cfg.ConcurrencyLimit && qs.dispatchOne(now) {
	}
}

// dispatchOne dispatches the head of the queue with the smallest virtual
// finish time (round-robin among ties), if it fits; there is no fallback to
// another queue when it does not.
func (qs *QueueSet) dispatchOne(now time.Time) bool {
	nq := len(qs.queues)
	if nq == 0 {
		return false
	}
	// robinIndex is in [-1, nq-1], so this is (robinIndex+1) mod nq.
	start := qs.robinIndex + 1
	if start >= nq {
		start = 0
	}
	if q := qs.deferred; q != nil {
		if qs.totWaiting == 1 && q.waiting.n == 1 && q.attached && q.finishR() != MaxSeatSeconds {
			// The lone waiting request is in q, so upstream's scan can only
			// pick q: dispatch without searching (or updating) the index.
			ok := qs.dispatchFrom(now, q)
			if !ok {
				qs.flushKey()
			}
			return ok
		}
		qs.flushKey()
	}
	i := qs.index.pick(start)
	if i < 0 {
		// Only requests orphaned in removed queues are waiting (upstream
		// would crash here); leave robinIndex as a full scan would.
		if qs.robinIndex < 0 {
			qs.robinIndex = nq - 1
		}
		return false
	}
	return qs.dispatchFrom(now, qs.queues[i])
}

// dispatchFrom dispatches the head of q, the queue upstream's scan picked,
// if it fits.
func (qs *QueueSet) dispatchFrom(now time.Time, q *queue) bool {
	nq := len(qs.queues)
	i := q.index
	r := q.waiting.head
	if !qs.canAccommodate(r.maxSeats()) {
		if do, ok := qs.observer.(DispatchObserver); ok {
			do.NoAccommodation(r.info())
		}
		// Upstream's scan makes a full cycle, which leaves robinIndex
		// where it was, except that -1 comes back as nq-1.
		if qs.robinIndex < 0 {
			qs.robinIndex = nq - 1
		}
		return false
	}
	if do, ok := qs.observer.(DispatchObserver); ok {
		do.DispatchStats(r.info(), qs.dispatchStats(q))
	}
	wasActive := q.active()
	oldSeats := r.maxSeats()
	q.waiting.remove(r)
	q.initialSeatsSum -= int(r.work.InitialSeats)
	q.maxSeatsSum -= oldSeats
	q.totalWorkSum -= r.totalWork
	qs.seatsRequested -= oldSeats
	if r.work.FinalSeats > uint64(qs.cfg.ConcurrencyLimit) {
		qs.clampFinalSeats(r)
	}
	qs.robinIndex = i
	seats := r.maxSeats()
	qs.totWaiting--
	// As upstream, subtract the seats after the clamp: a clamp that lowers
	// MaxSeats leaves the difference in SeatsWaiting.
	qs.totSeatsWaiting -= seats
	r.startTime = now
	qs.totExecuting++
	qs.totSeatsInUse += seats
	q.executing.pushBack(r)
	q.seatsInUse += seats
	qs.seatsRequested += seats
	r.state = StateExecuting
	qs.seatsChanged(now)
	q.nextDispatchR += r.totalWork
	qs.bound(q)
	qs.rekey(q)
	qs.noteActivity(q, wasActive)
	qs.started(r, now, r.arrivalTime)
	return true
}

// clampFinalSeats lowers FinalSeats to the concurrency limit and stretches
// AdditionalLatency to keep the final work (upstream's rounding).
func (qs *QueueSet) clampFinalSeats(r *Request) {
	fs := uint64(qs.cfg.ConcurrencyLimit)
	r.work.AdditionalLatency = r.finalWork.DurationPerSeat(float64(fs))
	r.work.FinalSeats = fs
}

func (qs *QueueSet) started(r *Request, now, arrival time.Time) {
	qs.dispatched++
	if qs.observer != nil {
		qs.observer.Dispatched(r.info(), now.Sub(arrival))
	}
	if qs.onDispatch != nil {
		qs.onDispatch(r)
	}
}

func (qs *QueueSet) seatsChanged(now time.Time) {
	// The integrator keeps its own time, as upstream's: it integrates
	// only here and when read (Demand, ResetDemand), never from syncTime,
	// so that a read does not make the next sync count the same time
	// again; demandLag is the time since its last update.
	qs.demand.setAfter(now, qs.demandLag, float64(qs.totSeatsInUse+qs.totSeatsWaiting))
	qs.demandLag = 0
	if qs.observer != nil {
		qs.observer.SeatsChanged(qs.totSeatsInUse, qs.totSeatsWaiting)
	}
}

// releaseSeats gives back r's seats and removes its queue if that queue is
// surplus and empty.
func (qs *QueueSet) releaseSeats(now time.Time, r *Request) {
	seats := r.maxSeats()
	qs.totSeatsInUse -= seats
	qs.seatsChanged(now)
	q := r.queue
	if q == nil {
		return
	}
	q.seatsInUse -= seats
	if q.attached {
		qs.seatsRequested -= seats
	}
	if len(qs.queues) > qs.cfg.Queues && !q.active() {
		if !q.attached && qs.cfg.FixStaleQueueRemoval {
			// q is already gone; its index now names another queue.
			return
		}
		qs.removeQueueAt(q.index)
	}
}

// removeQueueAt removes the queue at index i and shifts the later ones
// down. As upstream, i is the index the emptied queue last had, which is
// stale if that queue was already removed: then whichever queue now sits at
// i goes (upstream would panic if i is out of range; here nothing happens),
// unless Config.FixStaleQueueRemoval is set.
func (qs *QueueSet) removeQueueAt(i int) {
	if i < 0 || i >= len(qs.queues) {
		return
	}
	q := qs.queues[i]
	qs.seatsRequested -= q.seatsInUse + q.maxSeatsSum
	if q.active() {
		qs.activeQueues--
	}
	q.attached = false
	copy(qs.queues[i:], qs.queues[i+1:])
	qs.queues[len(qs.queues)-1] = nil
	qs.queues = qs.queues[:len(qs.queues)-1]
	for _, k := range qs.queues[i:] {
		k.index--
	}
	if qs.robinIndex >= i {
		qs.robinIndex--
	}
	qs.reindex()
}

// dispatchStats computes upstream's dispatch statistics for a dispatch
// from q, before the dispatch: O(queues), or O(1) when every waiting
// request is in q (the common immediate dispatch), since only queues
// with waiting requests count.
func (qs *QueueSet) dispatchStats(q *queue) DispatchStats {
	st := DispatchStats{R: qs.currentR, S: q.nextDispatchR,
		SMin: MaxSeatSeconds, DiscountedSMin: MaxSeatSeconds, SMax: 0, DiscountedSMax: 0}
	if q.attached && q.waiting.n == qs.totWaiting {
		s := q.nextDispatchR
		ds := s - SeatsTimesDuration(float64(q.seatsInUse), qs.g)
		st.SMin, st.SMax = s, s
		st.DiscountedSMin, st.DiscountedSMax = ds, ds
		return st
	}
	for _, w := range qs.queues {
		if w.waiting.n == 0 {
			continue
		}
		s := w.nextDispatchR
		ds := s - SeatsTimesDuration(float64(w.seatsInUse), qs.g)
		st.SMin, st.SMax = min(st.SMin, s), max(st.SMax, s)
		st.DiscountedSMin, st.DiscountedSMax = min(st.DiscountedSMin, ds), max(st.DiscountedSMax, ds)
	}
	return st
}
