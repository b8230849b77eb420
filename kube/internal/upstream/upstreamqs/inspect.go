package upstreamqs

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apiserver/pkg/util/flowcontrol/debug"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// Dump returns upstream's QueueSet dump (without request details).
func (e *Engine) Dump() debug.QueueSetDump { return e.qs.Dump(false) }

// IsIdle returns upstream's IsIdle.
func (e *Engine) IsIdle() bool { return e.qs.IsIdle() }

// CurrentR returns upstream's virtual time R as of its last time sync.
// Upstream exports no accessor, so it is read from the queueSet's
// unexported currentR field by reflection; it panics if the field is gone
// (a new upstream version), rather than return a wrong value.
func (e *Engine) CurrentR() fcrequest.SeatSeconds {
	return fcrequest.SeatSeconds(e.field("currentR", reflect.Uint64).Uint())
}

// RobinIndex returns the index of the queue upstream dispatched from last
// (its unexported robinIndex field, read by reflection like CurrentR).
func (e *Engine) RobinIndex() int { return int(e.field("robinIndex", reflect.Int).Int()) }

func (e *Engine) field(name string, kind reflect.Kind) reflect.Value {
	v := reflect.ValueOf(e.qs).Elem().FieldByName(name)
	if !v.IsValid() || v.Kind() != kind {
		panic(fmt.Sprintf("upstreamqs: upstream's queueSet has no %v field %q", kind, name))
	}
	return v
}

// WriteDebugText writes d, the dump of a queue set named name, as
// kube-apiserver's three APF debug endpoints show one priority level:
// /debug/api_priority_and_fairness/dump_priority_levels, then dump_queues,
// then dump_requests without includeRequestDetails, each with its header.
// The format is that of k8s.io/apiserver v0.37.2's
// pkg/util/flowcontrol/apf_controller_debug.go, which takes the controller
// to run: rows of comma-and-tab separated columns through a tabwriter with
// minwidth 8, tabwidth 0, padding 1 and space padding, one tabwriter per
// endpoint; ActiveQueues counts queues with waiting requests; IsQuiescing
// is false; times are RFC 3339 with nanoseconds in UTC.
func WriteDebugText(w io.Writer, name string, isIdle bool, d debug.QueueSetDump) error {
	active := 0
	for _, q := range d.Queues {
		if len(q.Requests) > 0 {
			active++
		}
	}
	itoa := strconv.Itoa
	endpoint := func(header []string, rows [][]string) error {
		tw := tabwriter.NewWriter(w, 8, 0, 1, ' ', 0)
		for _, cols := range append([][]string{header}, rows...) {
			if _, err := io.WriteString(tw, strings.Join(cols, ",\t")+"\n"); err != nil {
				return err
			}
		}
		return tw.Flush()
	}
	if err := endpoint([]string{"PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests",
		"ExecutingRequests", "DispatchedRequests", "RejectedRequests", "TimedoutRequests", "CancelledRequests"},
		[][]string{{name, itoa(active), strconv.FormatBool(isIdle), "false", itoa(d.Waiting), itoa(d.Executing),
			itoa(d.Dispatched), itoa(d.Rejected), itoa(d.Timedout), itoa(d.Cancelled)}}); err != nil {
		return err
	}
	var queues [][]string
	for i, q := range d.Queues {
		queues = append(queues, []string{name, itoa(i), itoa(len(q.Requests)), itoa(q.ExecutingRequests),
			itoa(q.SeatsInUse), q.NextDispatchR, itoa(q.QueueSum.InitialSeatsSum), itoa(q.QueueSum.MaxSeatsSum),
			q.QueueSum.TotalWorkSum})
	}
	if err := endpoint([]string{"PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse",
		"NextDispatchR", "InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum"}, queues); err != nil {
		return err
	}
	var reqs [][]string
	req := func(iq, ir int, r debug.RequestDump) {
		reqs = append(reqs, []string{name, r.MatchedFlowSchema, itoa(iq), itoa(ir), r.FlowDistinguisher,
			r.ArriveTime.UTC().Format(time.RFC3339Nano), itoa(int(r.WorkEstimate.InitialSeats)),
			itoa(int(r.WorkEstimate.FinalSeats)), r.WorkEstimate.AdditionalLatency.String(),
			r.StartTime.UTC().Format(time.RFC3339Nano)})
	}
	for iq, q := range d.Queues {
		for ir, r := range q.Requests {
			req(iq, ir, r)
		}
		for _, r := range q.RequestsExecuting {
			req(iq, -1, r)
		}
	}
	for _, r := range d.QueuelessExecutingRequests {
		req(-1, -1, r)
	}
	// "FlowDistingsher" is upstream's spelling.
	return endpoint([]string{"PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue",
		"FlowDistingsher", "ArriveTime", "InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime"}, reqs)
}
