package fairqueue

import (
	"errors"
	"fmt"
	"time"

	"github.com/fairslice/fairslice/shufflesharding"
)

// WorkEstimate is the work a request is expected to do: InitialSeats seats
// while it executes, then FinalSeats seats for AdditionalLatency after it
// finishes (upstream's request.WorkEstimate). A request holds
// max(InitialSeats, FinalSeats) seats from dispatch until its final phase
// ends.
//
// A valid estimate (see Validate) has 1 ≤ InitialSeats ≤ MaxWorkSeats,
// FinalSeats ≤ MaxWorkSeats and 0 ≤ AdditionalLatency ≤
// MaxAdditionalLatency. Limiter rejects any other estimate with an error;
// QueueSet.Arrive documents what the core does with one.
type WorkEstimate struct {
	InitialSeats      uint64
	FinalSeats        uint64
	AdditionalLatency time.Duration
}

// Limits of a valid WorkEstimate. Upstream's work estimator gives at most
// 10 seats (its MaximumSeatsLimit) and additional latencies of well under a
// second; these bounds are far above that and keep every seat count an
// int and every request's work (seats × duration in SeatSeconds) far from
// overflow on any platform.
const (
	// MaxWorkSeats is the largest InitialSeats or FinalSeats accepted: 2^20.
	MaxWorkSeats = 1 << 20
	// MaxAdditionalLatency is the longest AdditionalLatency accepted.
	MaxAdditionalLatency = time.Hour
)

// ErrInvalidWorkEstimate is wrapped by the errors WorkEstimate.Validate
// returns (and so by Limiter.Wait for an invalid estimate).
var ErrInvalidWorkEstimate = errors.New("fairqueue: invalid work estimate")

// Validate reports every problem with w at once, each naming the field and
// its value, wrapped in ErrInvalidWorkEstimate; nil if w is valid.
func (w WorkEstimate) Validate() error {
	var errs []error
	switch {
	case w.InitialSeats == 0:
		errs = append(errs, errors.New("InitialSeats=0 must be at least 1"))
	case w.InitialSeats > MaxWorkSeats:
		errs = append(errs, fmt.Errorf("InitialSeats=%d exceeds the maximum %d", w.InitialSeats, MaxWorkSeats))
	}
	if w.FinalSeats > MaxWorkSeats {
		errs = append(errs, fmt.Errorf("FinalSeats=%d exceeds the maximum %d", w.FinalSeats, MaxWorkSeats))
	}
	switch {
	case w.AdditionalLatency < 0:
		errs = append(errs, fmt.Errorf("AdditionalLatency=%v must not be negative", w.AdditionalLatency))
	case w.AdditionalLatency > MaxAdditionalLatency:
		errs = append(errs, fmt.Errorf("AdditionalLatency=%v exceeds the maximum %v", w.AdditionalLatency, MaxAdditionalLatency))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidWorkEstimate, errors.Join(errs...))
}

// MaxSeats returns max(InitialSeats, FinalSeats), the seats the request
// holds, saturated at MaxWorkSeats so that it never wraps to a negative
// int.
func (w WorkEstimate) MaxSeats() int {
	return int(min(max(w.InitialSeats, w.FinalSeats), MaxWorkSeats))
}

// normalized returns w with the seat counts lowered to MaxWorkSeats and a
// negative AdditionalLatency raised to 0: what the core uses.
func (w WorkEstimate) normalized() WorkEstimate {
	w.InitialSeats = min(w.InitialSeats, MaxWorkSeats)
	w.FinalSeats = min(w.FinalSeats, MaxWorkSeats)
	w.AdditionalLatency = max(w.AdditionalLatency, 0)
	return w
}

// Flow identifies the flow a request belongs to. Hash is what shuffle
// sharding deals the request's hand of queues from; requests with the same
// Hash are one flow as far as fairness goes. The other fields are carried,
// uninterpreted, into Dump output (FlowSchema and FlowDistinguisher, as
// upstream's debug endpoints show them) and into Observer events (all of
// them), so that per-flow metrics need no lookup of their own.
type Flow struct {
	Hash              uint64
	FlowSchema        string
	FlowDistinguisher string
	// Key is an opaque caller value, such as a per-flow metrics handle or
	// a map key; the package only carries it. It must be comparable if the
	// caller compares it.
	Key any
}

// NewFlow returns the Flow of APF's flow (flowSchema, distinguisher), with
// the hash upstream computes for it (shufflesharding.FlowHash).
func NewFlow(flowSchema, distinguisher string) Flow {
	return Flow{
		Hash:              shufflesharding.FlowHash(flowSchema, distinguisher),
		FlowSchema:        flowSchema,
		FlowDistinguisher: distinguisher,
	}
}

// RequestInfo identifies the request an Observer event is about: its flow
// and the index of the queue it entered (for a queue-full rejection, the
// queue that was full), or -1 if it went through no queue.
type RequestInfo struct {
	Flow
	Queue int
}

// Reason says why a request did not execute. The values are upstream's
// metric label values.
type Reason string

// The reasons a request can be turned away.
const (
	// ReasonQueueFull: all seats were in use and the chosen queue already
	// held QueueLengthLimit waiting requests.
	ReasonQueueFull Reason = "queue-full"
	// ReasonConcurrencyLimit: no queuing and the request's seats did not fit.
	ReasonConcurrencyLimit Reason = "concurrency-limit"
	// ReasonTimeOut: the request was removed from its queue because its
	// wait limit passed or its caller cancelled it. Upstream uses this one
	// reason (and metric label) for both; Counts and Observer.Cancelled
	// tell them apart.
	ReasonTimeOut Reason = "time-out"
)

// State is where a request is in its life.
type State uint8

// The states of a Request. A request ends exactly once: in StateRejected,
// StateTimedOut or StateDone.
const (
	StateNew       State = iota // not yet passed to Arrive, or reusable
	StateWaiting                // in a queue
	StateExecuting              // dispatched, initial phase
	StateLingering              // finished, final seats still held until Release
	StateDone                   // finished and all seats released
	StateRejected               // turned away on arrival
	StateTimedOut               // removed from its queue by Cancel or Expire
)

var stateNames = [...]string{"new", "waiting", "executing", "lingering", "done", "rejected", "timed-out"}

// String returns the state's name, such as "waiting".
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "invalid"
}

// Request is a caller-owned handle for one request passing through a
// QueueSet. The caller allocates it (once; it can be reused after it ended)
// and passes it to Arrive, Finish, Release and Cancel. Between Arrive and
// its end it belongs to one QueueSet and must not be passed to another.
//
// The embedded Flow appears in Dump output and Observer events; Arrive
// sets its Hash. Value is free for the caller. All other state is read
// through methods. A Request is linked into its queue by pointer, so it
// must not be copied while it is waiting, executing or lingering.
type Request struct {
	Flow
	Value any

	qs         *QueueSet
	queue      *queue
	prev, next *Request

	work      WorkEstimate
	totalWork SeatSeconds
	finalWork SeatSeconds
	arrivalR  SeatSeconds

	arrivalTime, startTime time.Time

	state  State
	reason Reason
}

// State returns where the request is in its life.
func (r *Request) State() State { return r.state }

// Reason returns why the request did not execute, or "" if it did or has
// not ended.
func (r *Request) Reason() Reason { return r.reason }

// Queue returns the current index of the queue the request entered, or -1
// if it went through no queue (no-queuing and exempt modes, rejection by
// concurrency limit). Indexes shift when surplus queues are removed; a
// request whose queue was removed keeps the queue's last index. For a
// queue-full rejection it is the queue that was full.
func (r *Request) Queue() int {
	if r.queue == nil {
		return -1
	}
	return r.queue.index
}

// Work returns the request's work estimate as the queue set uses it: after
// Arrive's normalization (see QueueSet.Arrive) and the final-seats clamp if
// dispatch applied it.
func (r *Request) Work() WorkEstimate { return r.work }

// ArrivalTime returns the time passed to Arrive.
func (r *Request) ArrivalTime() time.Time { return r.arrivalTime }

// StartTime returns the dispatch time, or the zero time before dispatch.
func (r *Request) StartTime() time.Time { return r.startTime }

func (r *Request) maxSeats() int { return r.work.MaxSeats() }

func (r *Request) info() RequestInfo { return RequestInfo{Flow: r.Flow, Queue: r.Queue()} }

// reqList is an intrusive doubly-linked FIFO of requests (a request is in at
// most one list at a time: waiting or executing).
type reqList struct {
	head, tail *Request
	n          int
}

func (l *reqList) pushBack(r *Request) {
	r.next = nil
	r.prev = l.tail
	if l.tail != nil {
		l.tail.next = r
	} else {
		l.head = r
	}
	l.tail = r
	l.n++
}

func (l *reqList) remove(r *Request) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		l.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		l.tail = r.prev
	}
	r.prev, r.next = nil, nil
	l.n--
}
