package apf

import (
	"cmp"
	"container/heap"
	"slices"
	"sync"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// FlowKey identifies a flow on one server: the priority level, the
// FlowSchema and the distinguisher it was classified to.
type FlowKey struct {
	PriorityLevel, FlowSchema, Distinguisher string
}

// FlowUsage is what one flow held and was refused on this server since
// the previous FlowLimiter.TakeUsage.
type FlowUsage struct {
	Flow FlowKey
	// SeatSeconds is the seats × execution time of its requests that
	// finished.
	SeatSeconds float64
	// InUseSeatSeconds is the seats its requests held waiting or
	// executing, over time: what it asked for, as the seats it would have
	// kept busy. With RefusedSeatSeconds, its demand.
	InUseSeatSeconds float64
	// RefusedSeatSeconds is the seats of its requests that were rejected
	// (for any reason, its cap included), each for the flow's mean
	// execution time: what it asked for and did not get.
	RefusedSeatSeconds float64
}

// FlowLimiter measures every flow's seat-seconds and holds single flows
// to a cap of seats, for coordinating replicas (package apf/fleet). Give
// it to one Controller in Options.FlowLimiter. With no caps set (the
// zero state) it only measures: every decision is the Controller's own.
//
// A capped flow's request whose seats, with those its flow has in the
// level's queues or executing, would exceed the cap (rounded to the
// nearest seat) is refused on arrival (concurrency-limit); with a
// FlowLimiter from NewHoldingFlowLimiter it waits instead.
//
// A holding FlowLimiter makes a flow wait, not fail. A capped flow's
// request whose seats, with those its flow has in the level's queues or
// executing, would
// exceed the cap (rounded to the nearest seat) is held outside the queue
// set, in arrival order per flow, and enters the queue set once its
// flow's seats have dropped (its requests finish or leave) or its cap
// has risen enough; SetCaps settles the held requests before it returns.
// A held request ends as a queued one would: its context ends it
// (time-out), Close ends it, its wait time counts from its arrival, and
// its seats count in InUseSeatSeconds. A flow holds at most HandSize ×
// QueueLengthLimit of its level's requests (none at a level that does
// not queue); beyond that, or when a request's own seats exceed the cap,
// the request is refused at once (concurrency-limit), as is a held one
// when SetCaps lowers its cap below its seats. A request queued before
// its cap came down is refused at dispatch (concurrency-limit) if its
// flow's executing seats would exceed the cap.
//
// Known gaps of holding, not yet handled: with requests of mixed seat
// sizes, a held request can wait until its context ends if its flow's
// last executing request was refused at dispatch; and a level that a
// reconfiguration removes is dropped without looking for requests held
// for it.
//
// Cost: one mutex and one map lookup at arrival, dispatch and finish of
// each request, and a slice append per held request; TakeUsage is
// O(flows). Safe for concurrent use.
type FlowLimiter struct {
	hold  bool // caps make requests wait (NewHoldingFlowLimiter)
	mu    sync.Mutex
	holds uint64 // requests held so far: the last one's holdSeq
	flows map[FlowKey]*flowUse
	caps  map[FlowKey]float64
}

// flowUse is one flow's state. Guarded by FlowLimiter.mu.
type flowUse struct {
	key            FlowKey
	inUse, running int       // seats waiting or executing; executing
	waiting        []*ticket // held over the cap, in arrival order
	heldSeats      int       // their seats
	inUseSec       float64   // seat-seconds of inUse since the period began
	since          time.Time
	held, refused  float64 // seat-seconds finished; seats refused
	execSum        float64 // seconds of the requests finished
	finished       int
	meanExec       float64 // seconds, the last period's with finishes
}

// NewFlowLimiter returns a FlowLimiter with no caps, whose caps refuse a
// request over them on arrival.
func NewFlowLimiter() *FlowLimiter { return &FlowLimiter{flows: map[FlowKey]*flowUse{}} }

// NewHoldingFlowLimiter returns a FlowLimiter with no caps, whose caps
// make a request over them wait, outside the queue set, until its flow's
// seats let it in (see FlowLimiter).
func NewHoldingFlowLimiter() *FlowLimiter {
	return &FlowLimiter{hold: true, flows: map[FlowKey]*flowUse{}}
}

// SetCaps replaces the caps, in seats, by flow; nil removes them all.
// Before it returns, the held requests that the new caps let through
// have entered their queue sets, and those whose seats exceed their new
// cap have been refused, one at a time in the order they were held,
// across flows (not in the order of a map), so the same calls give the
// same order. O(flows + released × log(flows holding)).
func (l *FlowLimiter) SetCaps(caps map[FlowKey]float64) {
	l.mu.Lock()
	l.caps = caps
	var holding heldHeads
	for _, f := range l.flows {
		if len(f.waiting) > 0 {
			holding = append(holding, heldHead{f, f.waiting[0].holdSeq})
		}
	}
	heap.Init(&holding)
	l.mu.Unlock()
	l.settle(&holding)
}

// settle lets the held requests of the flows in h through as their caps
// allow, oldest first: a k-way merge of the flows' holds by arrival.
// Each takes its level's lock (the level's lock before the limiter's, as
// on the request path).
func (l *FlowLimiter) settle(h *heldHeads) {
	for h.Len() > 0 {
		f := (*h)[0].f
		l.mu.Lock()
		if len(f.waiting) == 0 { // withdrawn or let through meanwhile
			heap.Pop(h)
			l.mu.Unlock()
			continue
		}
		lv := f.waiting[0].lv
		l.mu.Unlock()
		lv.mu.Lock()
		now := lv.c.clock.Now()
		t, refuse := l.nextHeld(f, now)
		switch {
		case t == nil:
		case refuse:
			t.lv.rejectHeld(now, t, fairqueue.ReasonConcurrencyLimit)
		default:
			t.lv.enter(now, t)
		}
		lv.mu.Unlock()
		l.mu.Lock()
		if t == nil || len(f.waiting) == 0 {
			heap.Pop(h) // its first held request cannot go yet
		} else {
			(*h)[0].seq = f.waiting[0].holdSeq
			heap.Fix(h, 0)
		}
		l.mu.Unlock()
	}
}

// heldHead is a flow holding requests, by the arrival of its first held
// request when it was last looked at.
type heldHead struct {
	f   *flowUse
	seq uint64 // holdSeq of f's first held request
}

// heldHeads is a min-heap of flows by their first held request's
// arrival (container/heap).
type heldHeads []heldHead

func (h heldHeads) Len() int           { return len(h) }
func (h heldHeads) Less(i, j int) bool { return h[i].seq < h[j].seq }
func (h heldHeads) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *heldHeads) Push(x any)        { *h = append(*h, x.(heldHead)) }
func (h *heldHeads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// release hands f's held requests, first come first, to their queue set
// while its cap lets them through, and refuses those whose own seats
// exceed it. Called with their level's lock held, not the limiter's.
func (l *FlowLimiter) release(f *flowUse, now time.Time) {
	if !l.hold {
		return // nothing is ever held: no second lock on the request path
	}
	for {
		t, refuse := l.nextHeld(f, now)
		switch {
		case t == nil:
			return
		case refuse:
			t.lv.rejectHeld(now, t, fairqueue.ReasonConcurrencyLimit)
		default:
			t.lv.enter(now, t)
		}
	}
}

// nextHeld takes f's first held request off its hold if it can go: into
// the queue set (counted in f's use), or refused (counted as refused);
// nil if none can.
func (l *FlowLimiter) nextHeld(f *flowUse, now time.Time) (t *ticket, refuse bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(f.waiting) == 0 {
		return nil, false
	}
	t = f.waiting[0]
	cp, capped := l.caps[f.key]
	refuse = capped && float64(t.seats) > cp+0.5
	if !refuse && l.over(f, f.inUse+t.seats) {
		return nil, false
	}
	l.unhold(f, now)
	if refuse {
		f.refused += float64(t.seats)
		t.flow = nil
		return t, true
	}
	f.inUse += t.seats
	return t, false
}

// unhold takes f's first held request off its hold. Called with l.mu.
func (l *FlowLimiter) unhold(f *flowUse, now time.Time) {
	t := f.waiting[0]
	f.accrue(now)
	copy(f.waiting, f.waiting[1:])
	f.waiting[len(f.waiting)-1] = nil
	f.waiting = f.waiting[:len(f.waiting)-1]
	f.heldSeats -= t.seats
}

// TakeUsage returns every flow's usage since the previous call, heaviest
// (SeatSeconds, then RefusedSeatSeconds) first, and starts a new period.
// Flows with nothing to report and nothing in use are forgotten.
func (l *FlowLimiter) TakeUsage(now time.Time) []FlowUsage {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []FlowUsage
	for k, f := range l.flows {
		f.accrue(now)
		if f.finished > 0 {
			f.meanExec = f.execSum / float64(f.finished)
		}
		if f.held > 0 || f.refused > 0 || f.inUseSec > 0 {
			out = append(out, FlowUsage{Flow: k, SeatSeconds: f.held, InUseSeatSeconds: f.inUseSec, RefusedSeatSeconds: f.refused * f.meanExec})
		}
		f.held, f.refused, f.execSum, f.finished, f.inUseSec = 0, 0, 0, 0, 0
		if f.inUse == 0 && len(f.waiting) == 0 && f.meanExec == 0 {
			delete(l.flows, k)
		}
	}
	slices.SortFunc(out, func(a, b FlowUsage) int {
		if c := cmp.Compare(b.SeatSeconds, a.SeatSeconds); c != 0 {
			return c
		}
		if c := cmp.Compare(b.RefusedSeatSeconds, a.RefusedSeatSeconds); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Flow.PriorityLevel, b.Flow.PriorityLevel), cmp.Compare(a.Flow.FlowSchema, b.Flow.FlowSchema),
			cmp.Compare(a.Flow.Distinguisher, b.Flow.Distinguisher))
	})
	return out
}

// over reports whether seats exceed the cap of f, if it has one.
func (l *FlowLimiter) over(f *flowUse, seats int) bool {
	cp, ok := l.caps[f.key]
	return ok && float64(seats) > cp+0.5
}

// accrue adds the seats in use since the last change to inUseSec.
func (f *flowUse) accrue(now time.Time) {
	if !f.since.IsZero() && now.After(f.since) {
		f.inUseSec += float64(f.inUse+f.heldSeats) * now.Sub(f.since).Seconds()
	}
	f.since = now
}

// admit counts t's seats in its flow's use, holds it over the cap
// behind the flow's other held requests, or refuses it: its own seats
// over the cap, or the flow's hold full. Called with t's level's lock.
func (l *FlowLimiter) admit(t *ticket, now time.Time) admission {
	k := FlowKey{t.cl.PriorityLevel, t.cl.FlowSchema, t.cl.Distinguisher}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.flows[k]
	if f == nil {
		f = &flowUse{key: k}
		l.flows[k] = f
	}
	if len(f.waiting) == 0 && !l.over(f, f.inUse+t.seats) {
		f.accrue(now)
		f.inUse += t.seats
		t.flow = f
		return admitLet
	}
	if !l.hold || l.over(f, t.seats) || len(f.waiting) >= holdLimit(t.lv.qcfg) {
		f.refused += float64(t.seats)
		return admitRefuse
	}
	f.accrue(now)
	l.holds++
	t.holdSeq = l.holds
	f.waiting = append(f.waiting, t)
	f.heldSeats += t.seats
	t.flow = f
	t.lv.held++
	return admitHold
}

// holdLimit is the most requests one flow may hold at a level of this
// queue configuration: as many as its hand's queues may hold, none at a
// level that does not queue.
func holdLimit(cfg fairqueue.Config) int {
	if cfg.Queues < 1 {
		return 0
	}
	return cfg.HandSize * cfg.QueueLengthLimit
}

// withdraw takes held t off its flow's hold, its waiter having given up;
// false if t is not held.
func (l *FlowLimiter) withdraw(t *ticket, now time.Time) bool {
	if t.flow == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := t.flow
	i := slices.Index(f.waiting, t)
	if i < 0 {
		return false
	}
	f.accrue(now)
	f.waiting = slices.Delete(f.waiting, i, i+1)
	f.heldSeats -= t.seats
	f.refused += float64(t.seats)
	t.flow = nil
	t.lv.held--
	return true
}

// started counts dispatched t's seats as executing, or refuses t if
// they take its flow over the cap (it was queued before the cap came
// down) and reports false.
func (l *FlowLimiter) started(t *ticket) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := t.flow
	if l.over(f, f.running+t.seats) {
		l.leaveLocked(t, true, t.r.StartTime())
		return false
	}
	f.running += t.seats
	return true
}

// refuse ends t, admitted but rejected before executing.
func (l *FlowLimiter) refuse(t *ticket, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaveLocked(t, true, now)
}

// finishedAt ends t, which executed until now.
func (l *FlowLimiter) finishedAt(t *ticket, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	exec := now.Sub(t.r.StartTime())
	f := t.flow
	f.running -= t.seats
	f.held += float64(t.seats) * exec.Seconds()
	f.execSum += exec.Seconds()
	f.finished++
	l.leaveLocked(t, false, now)
}

func (l *FlowLimiter) leaveLocked(t *ticket, refused bool, now time.Time) {
	t.flow.accrue(now)
	t.flow.inUse -= t.seats
	if refused {
		t.flow.refused += float64(t.seats)
	}
	t.flow = nil
}

// arrived is the FlowLimiter as the controller's admission hook: it
// counts t's seats in its flow's use, holds t over the flow's cap, or
// refuses it. Exempt requests are neither counted nor capped.
func (l *FlowLimiter) arrived(t *ticket, now time.Time) admission {
	if t.cl.Exempt {
		return admitLet
	}
	return l.admit(t, now)
}

func (l *FlowLimiter) waiting(*ticket) {}

// dispatching counts t's seats as executing, or refuses t over its
// flow's cap (it was queued before the cap came down).
func (l *FlowLimiter) dispatching(t *ticket) bool { return t.flow == nil || l.started(t) }

// rejected ends the accounting of t, counted at arrival and rejected
// before it executed,
// and lets its flow's held requests through as its cap allows.
func (l *FlowLimiter) rejected(t *ticket, now time.Time, _ fairqueue.Reason) {
	if f := t.flow; f != nil {
		l.refuse(t, now)
		l.release(f, now)
	}
}

// finished ends the accounting of t, which executed until now, and lets
// its flow's held requests through as its cap allows.
func (l *FlowLimiter) finished(t *ticket, now time.Time, _ bool) {
	if f := t.flow; f != nil {
		l.finishedAt(t, now)
		l.release(f, now)
	}
}

func (l *FlowLimiter) between() {}
