package apf

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// The paths of upstream's debug endpoints.
const (
	DebugPathPriorityLevels = "/debug/api_priority_and_fairness/dump_priority_levels"
	DebugPathQueues         = "/debug/api_priority_and_fairness/dump_queues"
	DebugPathRequests       = "/debug/api_priority_and_fairness/dump_requests"
	// DebugPathSeats, beyond upstream, shows the seat plan in force: the
	// total divided among the levels (Controller.Total) and each level's
	// limits (see WriteSeats).
	DebugPathSeats = "/debug/api_priority_and_fairness/dump_seats"
)

// LevelDump is a snapshot of one priority level.
type LevelDump struct {
	Name      string
	Quiescing bool
	Limits    Limits
	QueueSet  fairqueue.Dump
	// Held is the requests Options.FlowLimiter holds over their flows'
	// caps, not yet in the queue set.
	Held int
	// Baseline is the level's no-load execution time as the adaptive
	// total measured it (Options.Adaptive; see the package doc), 0
	// without Options.Adaptive or before its first probe.
	Baseline time.Duration
}

// Dump returns a snapshot of every priority level (quiescing ones
// included), in name order.
func (c *Controller) Dump() []LevelDump {
	c.mu.Lock()
	levels := c.sortedLevels()
	limits := make([]Limits, len(levels))
	baselines := make([]time.Duration, len(levels))
	for i, lv := range levels {
		limits[i] = lv.limits
		if c.adapt != nil {
			baselines[i] = c.adapt.rule.baselines[lv.name]
		}
	}
	c.mu.Unlock()
	out := make([]LevelDump, len(levels))
	for i, lv := range levels {
		lv.mu.Lock()
		out[i] = LevelDump{Name: lv.name, Quiescing: lv.quiescing, Limits: limits[i], QueueSet: lv.qs.Dump(), Held: lv.held, Baseline: baselines[i]}
		lv.mu.Unlock()
	}
	return out
}

func debugTabWriter(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 8, 0, 1, ' ', 0) }

func writeRow(w io.Writer, cols ...string) {
	io.WriteString(w, strings.Join(cols, ",\t"))
}

// WritePriorityLevels writes dump_priority_levels' text: one row per
// priority level, in name order, as upstream's endpoint does.
func WritePriorityLevels(w io.Writer, dumps []LevelDump) error {
	tw := debugTabWriter(w)
	writeRow(tw, "PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests",
		"ExecutingRequests", "DispatchedRequests", "RejectedRequests", "TimedoutRequests", "CancelledRequests")
	io.WriteString(tw, "\n")
	for i := range dumps {
		d := &dumps[i].QueueSet
		writeRow(tw, dumps[i].Name, strconv.Itoa(d.ActiveQueues()), strconv.FormatBool(d.IsIdle),
			strconv.FormatBool(dumps[i].Quiescing), strconv.Itoa(d.Waiting), strconv.Itoa(d.Executing),
			strconv.Itoa(d.Dispatched), strconv.Itoa(d.Rejected), strconv.Itoa(d.TimedOut), strconv.Itoa(d.Cancelled))
		io.WriteString(tw, "\n")
	}
	return tw.Flush()
}

// WriteQueues writes dump_queues' text: one row per queue of every
// priority level. Upstream lists the levels in map order; here they are in
// name order.
func WriteQueues(w io.Writer, dumps []LevelDump) error {
	tw := debugTabWriter(w)
	writeRow(tw, "PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse",
		"NextDispatchR", "InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum")
	io.WriteString(tw, "\n")
	for i := range dumps {
		d := dumps[i].QueueSet
		d.Name = dumps[i].Name
		for iq := range d.Queues {
			writeRow(tw, d.QueueColumns(iq)...)
			io.WriteString(tw, "\n")
		}
	}
	return tw.Flush()
}

// WriteRequests writes dump_requests' text: per priority level, each
// queue's waiting requests with their position, then its executing ones
// with position -1, then requests executing without a queue with queue -1;
// with details, the user and request attributes too.
func WriteRequests(w io.Writer, dumps []LevelDump, details bool) error {
	tw := debugTabWriter(w)
	writeRow(tw, "PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher",
		"ArriveTime", "InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime")
	if details {
		io.WriteString(tw, ",\t")
		writeRow(tw, "UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource", "SubResource")
	}
	io.WriteString(tw, "\n")
	for i := range dumps {
		d := dumps[i].QueueSet
		d.Name = dumps[i].Name
		d.EachRequest(func(queue, position int, r *fairqueue.RequestDump) {
			writeRow(tw, d.RequestColumns(queue, position, r)...)
			if details {
				io.WriteString(tw, ",\t")
				writeRow(tw, requestDetails(r)...)
			}
			io.WriteString(tw, "\n")
		})
	}
	return tw.Flush()
}

// WriteSeats writes dump_seats' text: the total divided among the levels,
// then one row per priority level, in name order, with its limits from the
// seat plan in force: nominal, lower and upper bounds, the borrowing's
// current limit (Borrowed), the one in force (Current, which a SeatPolicy
// may have decided) and the smoothed seat demand.
func WriteSeats(w io.Writer, total int, dumps []LevelDump) error {
	tw := debugTabWriter(w)
	writeRow(tw, "Total", strconv.Itoa(total))
	io.WriteString(tw, "\n")
	writeRow(tw, "PriorityLevelName", "Nominal", "Lower", "Upper", "Borrowed", "Current", "DemandSmoothed")
	io.WriteString(tw, "\n")
	for i := range dumps {
		l := &dumps[i].Limits
		writeRow(tw, dumps[i].Name, strconv.Itoa(l.Nominal), strconv.Itoa(l.Lower), strconv.Itoa(l.Upper),
			strconv.Itoa(l.Borrowed), strconv.Itoa(l.Current), strconv.FormatFloat(l.DemandSmoothed, 'f', 2, 64))
		io.WriteString(tw, "\n")
	}
	return tw.Flush()
}

// requestDetails returns the columns dump_requests adds with
// includeRequestDetails: the user and request attributes.
func requestDetails(r *fairqueue.RequestDump) []string {
	var req Request
	if p := requestOf(r); p != nil {
		req = *p
	}
	ri := &req.Info
	gv := ri.APIVersion
	if ri.APIGroup != "" {
		gv = ri.APIGroup + "/" + ri.APIVersion
	}
	return []string{req.User.Name, ri.Verb, ri.Path, ri.Namespace, ri.Name, gv, ri.Resource, ri.Subresource}
}

// DebugHandler serves upstream's three debug endpoints (see the DebugPath
// constants) in their text formats, and dump_seats (DebugPathSeats,
// beyond upstream); dump_requests takes ?includeRequestDetails=1. Other
// paths get 404.
func (c *Controller) DebugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		switch r.URL.Path {
		case DebugPathPriorityLevels:
			err = WritePriorityLevels(w, c.Dump())
		case DebugPathQueues:
			err = WriteQueues(w, c.Dump())
		case DebugPathRequests:
			err = WriteRequests(w, c.Dump(), r.URL.Query().Get("includeRequestDetails") != "")
		case DebugPathSeats:
			err = WriteSeats(w, c.Total(), c.Dump())
		default:
			http.NotFound(w, r)
			return
		}
		if err != nil {
			fmt.Fprintln(w, "error:", err)
		}
	})
}

// InstallDebug registers DebugHandler at the four debug paths of mux.
func (c *Controller) InstallDebug(mux *http.ServeMux) {
	h := c.DebugHandler()
	mux.Handle(DebugPathPriorityLevels, h)
	mux.Handle(DebugPathQueues, h)
	mux.Handle(DebugPathRequests, h)
	mux.Handle(DebugPathSeats, h)
}
