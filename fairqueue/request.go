package fairqueue

import "time"

// WorkEstimate is the work a request is expected to do: InitialSeats seats
// while it executes, then FinalSeats seats for AdditionalLatency after it
// finishes (upstream's request.WorkEstimate). A request holds
// max(InitialSeats, FinalSeats) seats from dispatch until its final phase
// ends.
type WorkEstimate struct {
	InitialSeats      uint64
	FinalSeats        uint64
	AdditionalLatency time.Duration
}

// MaxSeats returns max(InitialSeats, FinalSeats), the seats the request holds.
func (w WorkEstimate) MaxSeats() int {
	if w.InitialSeats >= w.FinalSeats {
		return int(w.InitialSeats)
	}
	return int(w.FinalSeats)
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
	// ReasonTimeOut: the request was cancelled or its wait limit passed
	// while it waited. Upstream uses this one reason for both.
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
	StateTimedOut               // removed from its queue by Cancel
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
// FlowSchema and FlowDistinguisher appear only in Dump output; Value is free
// for the caller. All other state is read through methods. A Request is
// linked into its queue by pointer, so it must not be copied while it is
// waiting, executing or lingering.
type Request struct {
	FlowSchema        string
	FlowDistinguisher string
	Value             any

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

// Work returns the request's work estimate, after the final-seats clamp if
// dispatch applied it.
func (r *Request) Work() WorkEstimate { return r.work }

// ArrivalTime returns the time passed to Arrive.
func (r *Request) ArrivalTime() time.Time { return r.arrivalTime }

// StartTime returns the dispatch time, or the zero time before dispatch.
func (r *Request) StartTime() time.Time { return r.startTime }

func (r *Request) maxSeats() int { return r.work.MaxSeats() }

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
