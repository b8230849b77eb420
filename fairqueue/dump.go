package fairqueue

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Dump is a snapshot of a QueueSet, with the information of upstream's
// debug.QueueSetDump (dump_queues and dump_requests).
type Dump struct {
	Name   string
	Queues []QueueDump
	// QueuelessExecuting lists requests executing without a queue (no-queuing
	// and exempt modes), in dispatch order.
	QueuelessExecuting []RequestDump

	Waiting, Executing       int
	SeatsInUse, SeatsWaiting int
	Dispatched, Rejected     int
	TimedOut, Cancelled      int

	IsIdle     bool
	CurrentR   SeatSeconds
	RobinIndex int
}

// QueueDump describes one queue.
type QueueDump struct {
	Index int
	// Waiting lists the waiting requests, oldest first.
	Waiting []RequestDump
	// Executing lists the requests in their initial phase, in dispatch order
	// (upstream's order is unspecified).
	Executing     []RequestDump
	NextDispatchR SeatSeconds
	SeatsInUse    int

	InitialSeatsSum, MaxSeatsSum int         // over waiting requests
	TotalWorkSum                 SeatSeconds // over waiting requests
}

// RequestDump describes one request. Its queue is the QueueDump it is
// listed in (none for QueuelessExecuting).
type RequestDump struct {
	Flow
	ArriveTime time.Time
	StartTime  time.Time // zero while waiting
	Work       WorkEstimate
}

// Dump returns a snapshot. It does not advance R (upstream's does not
// either). O(queues + requests); it allocates.
func (qs *QueueSet) Dump() Dump {
	d := Dump{
		Name:    qs.cfg.Name,
		Queues:  make([]QueueDump, len(qs.queues)),
		Waiting: qs.totWaiting, Executing: qs.totExecuting,
		SeatsInUse: qs.totSeatsInUse, SeatsWaiting: qs.totSeatsWaiting,
		Dispatched: qs.dispatched, Rejected: qs.rejected,
		TimedOut: qs.timedOut, Cancelled: qs.cancelled,
		IsIdle: qs.IsIdle(), CurrentR: qs.currentR, RobinIndex: qs.robinIndex,
	}
	for i, q := range qs.queues {
		d.Queues[i] = QueueDump{
			Index:           i,
			Waiting:         dumpList(&q.waiting),
			Executing:       dumpList(&q.executing),
			NextDispatchR:   q.nextDispatchR,
			SeatsInUse:      q.seatsInUse,
			InitialSeatsSum: q.initialSeatsSum,
			MaxSeatsSum:     q.maxSeatsSum,
			TotalWorkSum:    q.totalWorkSum,
		}
	}
	d.QueuelessExecuting = dumpList(&qs.queueless)
	return d
}

func dumpList(l *reqList) []RequestDump {
	if l.n == 0 {
		return nil
	}
	out := make([]RequestDump, 0, l.n)
	for r := l.head; r != nil; r = r.next {
		out = append(out, RequestDump{
			Flow:       r.Flow,
			ArriveTime: r.arrivalTime,
			StartTime:  r.startTime,
			Work:       r.work,
		})
	}
	return out
}

// ActiveQueues returns the number of queues with waiting requests, as the
// dump_priority_levels endpoint counts them.
func (d *Dump) ActiveQueues() int {
	n := 0
	for i := range d.Queues {
		if len(d.Queues[i].Waiting) > 0 {
			n++
		}
	}
	return n
}

// The upstream debug endpoints write comma-and-tab separated rows through a
// tabwriter with these settings.
func newDebugTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 8, 0, 1, ' ', 0)
}

func row(tw io.Writer, cols ...string) error {
	_, err := fmt.Fprint(tw, strings.Join(cols, ",\t"), "\n")
	return err
}

// WritePriorityLevel writes the header and the row that upstream's
// /debug/api_priority_and_fairness/dump_priority_levels endpoint writes for
// this queue set (IsQuiescing is false).
func (d *Dump) WritePriorityLevel(w io.Writer) error {
	tw := newDebugTabWriter(w)
	_ = row(tw, "PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests",
		"ExecutingRequests", "DispatchedRequests", "RejectedRequests", "TimedoutRequests", "CancelledRequests")
	_ = row(tw, d.Name, strconv.Itoa(d.ActiveQueues()), strconv.FormatBool(d.IsIdle), "false",
		strconv.Itoa(d.Waiting), strconv.Itoa(d.Executing), strconv.Itoa(d.Dispatched),
		strconv.Itoa(d.Rejected), strconv.Itoa(d.TimedOut), strconv.Itoa(d.Cancelled))
	return tw.Flush()
}

// WriteQueues writes the header and the rows that upstream's
// /debug/api_priority_and_fairness/dump_queues endpoint writes for this
// queue set: one row per queue.
func (d *Dump) WriteQueues(w io.Writer) error {
	tw := newDebugTabWriter(w)
	_ = row(tw, "PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse",
		"NextDispatchR", "InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum")
	for i := range d.Queues {
		_ = row(tw, d.QueueColumns(i)...)
	}
	return tw.Flush()
}

// QueueColumns returns the columns of queue i's row in upstream's
// dump_queues text, the first being d.Name.
func (d *Dump) QueueColumns(i int) []string {
	q := &d.Queues[i]
	return []string{d.Name, strconv.Itoa(i), strconv.Itoa(len(q.Waiting)), strconv.Itoa(len(q.Executing)),
		strconv.Itoa(q.SeatsInUse), q.NextDispatchR.String(), strconv.Itoa(q.InitialSeatsSum),
		strconv.Itoa(q.MaxSeatsSum), q.TotalWorkSum.String()}
}

// WriteRequests writes the header and the rows that upstream's
// /debug/api_priority_and_fairness/dump_requests endpoint (without
// includeRequestDetails) writes for this queue set: per queue the waiting
// requests with their position, then the executing ones with position -1;
// then queueless executing requests with queue index -1.
func (d *Dump) WriteRequests(w io.Writer) error {
	tw := newDebugTabWriter(w)
	_ = row(tw, "PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher",
		"ArriveTime", "InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime")
	d.EachRequest(func(queue, position int, r *RequestDump) {
		_ = row(tw, d.RequestColumns(queue, position, r)...)
	})
	return tw.Flush()
}

// EachRequest calls f with every request of d in the order of upstream's
// dump_requests: per queue, its waiting requests with their position, then
// its executing ones with position -1; then the requests executing without
// a queue, with queue -1 and position -1.
func (d *Dump) EachRequest(f func(queue, position int, r *RequestDump)) {
	for iq := range d.Queues {
		q := &d.Queues[iq]
		for ir := range q.Waiting {
			f(iq, ir, &q.Waiting[ir])
		}
		for ir := range q.Executing {
			f(iq, -1, &q.Executing[ir])
		}
	}
	for ir := range d.QueuelessExecuting {
		f(-1, -1, &d.QueuelessExecuting[ir])
	}
}

// RequestColumns returns the columns of r's row in upstream's
// dump_requests text without includeRequestDetails, the first being
// d.Name; queue and position are as EachRequest passes them.
func (d *Dump) RequestColumns(queue, position int, r *RequestDump) []string {
	return []string{d.Name, r.FlowSchema, strconv.Itoa(queue), strconv.Itoa(position), r.FlowDistinguisher,
		r.ArriveTime.UTC().Format(time.RFC3339Nano), strconv.Itoa(int(r.Work.InitialSeats)),
		strconv.Itoa(int(r.Work.FinalSeats)), r.Work.AdditionalLatency.String(),
		r.StartTime.UTC().Format(time.RFC3339Nano)}
}
