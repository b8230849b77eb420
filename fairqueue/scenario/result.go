package scenario

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
	"time"
)

// Outcome is how a request's life in the queue set ended.
type Outcome string

// Outcomes.
const (
	OutcomeDispatched Outcome = "dispatched"
	OutcomeRejected   Outcome = "rejected"
	// OutcomeWaiting marks a request still waiting when the scenario ran
	// out of events. It is an extension of the output format: it happens
	// only when nothing can ever dispatch the request and it has no wait
	// limit (a concurrency limit of 0 with queues, or a queue detached by
	// upstream's stale-index queue removal; see the package doc).
	OutcomeWaiting Outcome = "waiting"
)

// Reason says why a request was rejected; it is empty otherwise.
type Reason string

// Reasons, with upstream's metric label values.
const (
	ReasonNone             Reason = ""
	ReasonQueueFull        Reason = "queue-full"
	ReasonConcurrencyLimit Reason = "concurrency-limit"
	ReasonTimeOut          Reason = "time-out"
)

// Result is the fate of one request.
type Result struct {
	ID      string
	Outcome Outcome
	Reason  Reason
	// Queue is the index of the queue the request entered, at the moment
	// it entered, or -1 if it entered none.
	Queue int
	// DispatchedAt is the dispatch instant; meaningful only when Outcome
	// is OutcomeDispatched.
	DispatchedAt time.Duration
	// Order is the request's position (from 0) in the run's dispatch
	// order, which also orders requests dispatched at the same instant; -1
	// if it was not dispatched. It is not part of the JSON output.
	Order int
}

// MarshalJSON renders r as
// {"id","outcome","reason","queue","dispatchedAt"} in that key order, with
// dispatchedAt a Go duration string, or "" if not dispatched.
func (r Result) MarshalJSON() ([]byte, error) {
	return r.appendJSON(nil), nil
}

func (r Result) appendJSON(b []byte) []byte {
	id, _ := json.Marshal(r.ID) // a string always marshals
	b = append(b, `{"id":`...)
	b = append(b, id...)
	b = append(b, `,"outcome":`...)
	b = strconv.AppendQuote(b, string(r.Outcome))
	b = append(b, `,"reason":`...)
	b = strconv.AppendQuote(b, string(r.Reason))
	b = append(b, `,"queue":`...)
	b = strconv.AppendInt(b, int64(r.Queue), 10)
	b = append(b, `,"dispatchedAt":"`...)
	if r.Outcome == OutcomeDispatched {
		b = append(b, r.DispatchedAt.String()...)
	}
	return append(b, `"}`...)
}

// WriteResults writes one JSON object per line, in the order given.
func WriteResults(w io.Writer, results []Result) error {
	bw := bufio.NewWriter(w)
	var b []byte
	for _, r := range results {
		b = r.appendJSON(b[:0])
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}
