package scenario

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// FlowStats summarises the requests of one flow (one hash value).
type FlowStats struct {
	Hash       uint64
	Requests   int
	Dispatched int
	// Rejected counts rejections at arrival (queue-full and
	// concurrency-limit); TimedOut counts wait-limit expiries.
	Rejected int
	TimedOut int
	Waiting  int
	// SeatSeconds is the work served: the sum over dispatched requests of
	// InitialSeats × Duration.
	SeatSeconds float64
	// Throughput is dispatched requests per second of the scenario's span.
	Throughput float64
	// WaitP50, WaitP90 and WaitP99 are nearest-rank percentiles of the
	// wait (dispatch minus arrival) of the dispatched requests.
	WaitP50, WaitP90, WaitP99 time.Duration
}

// Summary is the per-flow view of a run.
type Summary struct {
	// Span runs from time 0 to the last arrival or completion (dispatch
	// plus duration); throughputs are relative to it.
	Span time.Duration
	// Flows, in increasing hash order.
	Flows []FlowStats
	// Fairness is Jain's fairness index over the flows' SeatSeconds:
	// (Σx)² / (n·Σx²). It is 1 when every flow got the same service and
	// 1/n when one flow got it all; it is 1 when no flow got any.
	Fairness float64
}

// Summarize computes the summary of results, which must be Run's output
// for s.
func Summarize(s *Scenario, results []Result) Summary {
	byHash := map[uint64]*FlowStats{}
	waits := map[uint64][]time.Duration{}
	var sum Summary
	for i, req := range s.Requests {
		res := results[i]
		f := byHash[req.Hash]
		if f == nil {
			f = &FlowStats{Hash: req.Hash}
			byHash[req.Hash] = f
		}
		f.Requests++
		sum.Span = max(sum.Span, req.Arrival)
		switch {
		case res.Outcome == OutcomeDispatched:
			f.Dispatched++
			f.SeatSeconds += float64(req.InitialSeats) * req.Duration.Seconds()
			waits[req.Hash] = append(waits[req.Hash], res.DispatchedAt-req.Arrival)
			sum.Span = max(sum.Span, addSat(res.DispatchedAt, req.Duration))
		case res.Reason == ReasonTimeOut:
			f.TimedOut++
		case res.Outcome == OutcomeRejected:
			f.Rejected++
		default:
			f.Waiting++
		}
	}
	var total, squares float64
	for h, f := range byHash {
		if sum.Span > 0 {
			f.Throughput = float64(f.Dispatched) / sum.Span.Seconds()
		}
		w := waits[h]
		slices.Sort(w)
		f.WaitP50, f.WaitP90, f.WaitP99 = percentile(w, 50), percentile(w, 90), percentile(w, 99)
		total += f.SeatSeconds
		squares += f.SeatSeconds * f.SeatSeconds
		sum.Flows = append(sum.Flows, *f)
	}
	slices.SortFunc(sum.Flows, func(a, b FlowStats) int { return cmp.Compare(a.Hash, b.Hash) })
	sum.Fairness = 1
	if squares > 0 {
		sum.Fairness = total * total / (float64(len(sum.Flows)) * squares)
	}
	return sum
}

// percentile returns the nearest-rank p-th percentile of sorted, or 0 if
// it is empty.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return sorted[max(rank, 1)-1]
}

// WriteText writes the summary as an aligned table followed by the
// fairness index.
func (s Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "flow (hash)\trequests\tdispatched\trejected\ttimed out\twaiting\tseat-seconds\treq/s\twait p50\twait p90\twait p99\t\n")
	for _, f := range s.Flows {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%v\t%v\t%v\t\n",
			f.Hash, f.Requests, f.Dispatched, f.Rejected, f.TimedOut, f.Waiting,
			f.SeatSeconds, f.Throughput, f.WaitP50, f.WaitP90, f.WaitP99)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "span %v, %d flows, Jain's fairness index over seat-seconds %.4f\n", s.Span, len(s.Flows), s.Fairness)
	return err
}
