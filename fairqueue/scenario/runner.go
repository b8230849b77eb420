package scenario

import (
	"container/heap"
	"fmt"
	"math"
	"time"
)

// Admission is an engine's answer to an arrival.
type Admission struct {
	// Queue is the index of the queue the request entered, at the moment it
	// entered it, or -1 if it entered none (rejected, or dispatched without
	// queuing in the no-queuing and exempt modes).
	Queue int
	// Rejected reports that the request was turned away at arrival.
	Rejected bool
	// Reason is ReasonQueueFull or ReasonConcurrencyLimit when Rejected.
	Reason Reason
}

// Host is the runner as seen by an Engine. An engine calls it from inside
// its methods, never from another goroutine.
type Host interface {
	// Dispatched reports that request i (an index into Scenario.Requests)
	// was dispatched at the current instant. Dispatches must be reported in
	// the order they happen; the runner schedules the completion of request
	// i at now + Requests[i].Duration.
	Dispatched(i int)
	// Schedule asks the runner to call Engine.Fire(at, token) at instant
	// at ≥ now, as an event of the completions-and-seat-releases class,
	// ordered among same-instant events of that class by the order of the
	// Schedule and Dispatched calls.
	Schedule(at time.Duration, token int)
	// Fail reports an internal failure of the engine; Run stops after the
	// current event and returns the first such error.
	Fail(err error)
}

// Engine is a queue set driven by Run. Every method runs one event to the
// end, including all the dispatching it triggers, which the engine reports
// through Host.Dispatched before returning. now is the offset from time 0
// and never decreases across calls.
type Engine interface {
	// Start builds the queue set for s.Config. It is called once, first.
	Start(s *Scenario, h Host) error
	// Arrive offers request i to the queue set.
	Arrive(now time.Duration, i int) Admission
	// Complete finishes the execution of the dispatched request i. The
	// engine releases its seats now, or schedules the release (through
	// Host.Schedule) if the request has an additional latency.
	Complete(now time.Duration, i int)
	// Expire removes request i, which is waiting in a queue, because its
	// wait limit passed. It reports whether the request was removed.
	Expire(now time.Duration, i int) bool
	// Fire runs an event the engine scheduled with Host.Schedule.
	Fire(now time.Duration, token int)
	// Reconfigure replaces the configuration.
	Reconfigure(now time.Duration, c Config) error
}

// Event classes, in the order they run at the same instant.
const (
	classRelease  = iota // completions and engine-scheduled events
	classExpiry          // wait-limit expiries, in file order
	classReconfig        // reconfigurations, in file order
	classArrival         // arrivals, in file order
)

// Kinds of classRelease events.
const (
	kindComplete = iota
	kindFire
)

type event struct {
	at    time.Duration
	class int
	seq   int // scheduling order (classRelease) or file index
	kind  int
	arg   int // request index or engine token
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.class != b.class {
		return a.class < b.class
	}
	return a.seq < b.seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type reqState uint8

const (
	statePending reqState = iota
	stateArriving
	stateWaiting
	stateExecuting
	stateDone
)

type runner struct {
	s       *Scenario
	events  eventHeap
	seq     int
	order   int // dispatches so far
	now     time.Duration
	state   []reqState
	results []Result
	err     error
}

// Run replays s through e and returns one Result per request, in input
// order. Events run in order of time; at the same instant, first
// completions and engine-scheduled seat releases (in the order they were
// scheduled), then wait-limit expiries (in file order; the expiry of a
// request that is no longer waiting does nothing), then reconfigurations
// (in file order), then arrivals (in file order). Each event, with all the
// dispatching it triggers, finishes before the next starts. An event
// scheduled for the current instant (a zero-duration execution, say) takes
// its place among the pending events by the same rules.
//
// Requests still waiting when no events remain (possible only when the
// concurrency limit is 0) get OutcomeWaiting. Run returns an error if e
// fails to start or reconfigure, or breaks the Engine contract.
func Run(s *Scenario, e Engine) ([]Result, error) {
	r := &runner{
		s:       s,
		state:   make([]reqState, len(s.Requests)),
		results: make([]Result, len(s.Requests)),
	}
	for i, req := range s.Requests {
		r.results[i] = Result{ID: req.ID, Outcome: OutcomeWaiting, Queue: -1, Order: -1}
		r.events = append(r.events, event{at: req.Arrival, class: classArrival, seq: i, arg: i})
		if req.WaitLimit > 0 {
			r.events = append(r.events, event{at: addSat(req.Arrival, req.WaitLimit), class: classExpiry, seq: i, arg: i})
		}
	}
	for i, rc := range s.Reconfigurations {
		r.events = append(r.events, event{at: rc.At, class: classReconfig, seq: i, arg: i})
	}
	heap.Init(&r.events)
	if err := e.Start(s, r); err != nil {
		return nil, err
	}
	for r.events.Len() > 0 && r.err == nil {
		ev := heap.Pop(&r.events).(event)
		r.now = ev.at
		switch ev.class {
		case classRelease:
			if ev.kind == kindFire {
				e.Fire(r.now, ev.arg)
				break
			}
			if r.state[ev.arg] != stateExecuting {
				r.fail("completion of request %q, which is not executing", s.Requests[ev.arg].ID)
				break
			}
			r.state[ev.arg] = stateDone
			e.Complete(r.now, ev.arg)
		case classExpiry:
			i := ev.arg
			if r.state[i] != stateWaiting {
				break
			}
			if !e.Expire(r.now, i) {
				r.fail("engine did not expire waiting request %q", s.Requests[i].ID)
				break
			}
			r.state[i] = stateDone
			r.results[i].Outcome = OutcomeRejected
			r.results[i].Reason = ReasonTimeOut
		case classReconfig:
			if err := e.Reconfigure(r.now, s.Reconfigurations[ev.arg].Config); err != nil {
				return nil, fmt.Errorf("scenario: reconfigurations[%d] at %v: %w", ev.arg, r.now, err)
			}
		case classArrival:
			i := ev.arg
			r.state[i] = stateArriving
			adm := e.Arrive(r.now, i)
			r.results[i].Queue = adm.Queue
			switch {
			case adm.Rejected:
				if r.state[i] != stateArriving {
					r.fail("engine rejected request %q after dispatching it", s.Requests[i].ID)
				}
				r.state[i] = stateDone
				r.results[i].Outcome = OutcomeRejected
				r.results[i].Reason = adm.Reason
				r.results[i].Queue = -1
			case r.state[i] == stateArriving:
				r.state[i] = stateWaiting
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.results, nil
}

func (r *runner) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("scenario: engine contract violated at %v: %s", r.now, fmt.Sprintf(format, args...))
	}
}

// Fail implements Host.
func (r *runner) Fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("scenario: engine failed at %v: %w", r.now, err)
	}
}

// Dispatched implements Host.
func (r *runner) Dispatched(i int) {
	if i < 0 || i >= len(r.state) {
		r.fail("dispatch of unknown request index %d", i)
		return
	}
	if st := r.state[i]; st != stateWaiting && st != stateArriving {
		r.fail("dispatch of request %q, which is not waiting", r.s.Requests[i].ID)
		return
	}
	r.state[i] = stateExecuting
	r.results[i].Outcome = OutcomeDispatched
	r.results[i].DispatchedAt = r.now
	r.results[i].Order = r.order
	r.order++
	r.push(addSat(r.now, r.s.Requests[i].Duration), kindComplete, i)
}

// Schedule implements Host.
func (r *runner) Schedule(at time.Duration, token int) {
	if at < r.now {
		r.fail("event scheduled in the past (%v)", at)
		return
	}
	r.push(at, kindFire, token)
}

func (r *runner) push(at time.Duration, kind, arg int) {
	heap.Push(&r.events, event{at: at, class: classRelease, seq: r.seq, kind: kind, arg: arg})
	r.seq++
}

// addSat adds two non-negative durations, saturating instead of wrapping.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
