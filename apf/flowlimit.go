package apf

import (
	"cmp"
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
// A capped flow's request is rejected (concurrency-limit) on arrival if
// the seats its flow has waiting or executing, with its own, would exceed
// the cap (rounded to the nearest seat), and at dispatch if its flow's
// executing seats would (it was queued before the cap came down).
//
// Cost: one mutex and one map lookup at arrival, dispatch and finish of
// each request; TakeUsage is O(flows). Safe for concurrent use.
type FlowLimiter struct {
	mu    sync.Mutex
	flows map[FlowKey]*flowUse
	caps  map[FlowKey]float64
}

// flowUse is one flow's state. Guarded by FlowLimiter.mu.
type flowUse struct {
	key            FlowKey
	inUse, running int     // seats waiting or executing; executing
	inUseSec       float64 // seat-seconds of inUse since the period began
	since          time.Time
	held, refused  float64 // seat-seconds finished; seats refused
	execSum        float64 // seconds of the requests finished
	finished       int
	meanExec       float64 // seconds, the last period's with finishes
}

// NewFlowLimiter returns a FlowLimiter with no caps.
func NewFlowLimiter() *FlowLimiter { return &FlowLimiter{flows: map[FlowKey]*flowUse{}} }

// SetCaps replaces the caps, in seats, by flow; nil removes them all.
func (l *FlowLimiter) SetCaps(caps map[FlowKey]float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.caps = caps
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
		if f.inUse == 0 && f.meanExec == 0 {
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
		f.inUseSec += float64(f.inUse) * now.Sub(f.since).Seconds()
	}
	f.since = now
}

// admit counts t's seats in its flow's use, or refuses it over the cap.
func (l *FlowLimiter) admit(t *ticket, now time.Time) bool {
	k := FlowKey{t.cl.PriorityLevel, t.cl.FlowSchema, t.cl.Distinguisher}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.flows[k]
	if f == nil {
		f = &flowUse{key: k}
		l.flows[k] = f
	}
	if l.over(f, f.inUse+t.seats) {
		f.refused += float64(t.seats)
		return false
	}
	f.accrue(now)
	f.inUse += t.seats
	t.flow = f
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
// counts t's seats in its flow's use, or refuses t over the flow's cap.
// Exempt requests are neither counted nor capped.
func (l *FlowLimiter) arrived(t *ticket, now time.Time) bool {
	return t.cl.Exempt || l.admit(t, now)
}

func (l *FlowLimiter) waiting(*ticket) {}

// dispatching counts t's seats as executing, or refuses t over its
// flow's cap (it was queued before the cap came down).
func (l *FlowLimiter) dispatching(t *ticket) bool { return t.flow == nil || l.started(t) }

// rejected ends the accounting of t, counted at arrival and rejected
// before it executed.
func (l *FlowLimiter) rejected(t *ticket, now time.Time, _ fairqueue.Reason) {
	if t.flow != nil {
		l.refuse(t, now)
	}
}

// finished ends the accounting of t, which executed until now.
func (l *FlowLimiter) finished(t *ticket, now time.Time, _ bool) {
	if t.flow != nil {
		l.finishedAt(t, now)
	}
}

func (l *FlowLimiter) between() {}
