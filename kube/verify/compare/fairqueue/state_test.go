package fairqueuecompare

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/util/flowcontrol/debug"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/fairqueue/scenario"
	"github.com/fairslice/fairslice/kube/internal/upstream/upstreamqs"
)

// setState is what the differential test compares between the engines
// after every event, beyond the per-request results: the virtual time R,
// the robin index, each queue's next dispatch R and lengths, and the text
// of the three APF debug endpoints for the queue set.
type setState struct {
	R          string
	RobinIndex int
	Queues     []queueState
	// Text is the dump in the debug endpoints' format: fairqueue's
	// Dump.WritePriorityLevel, WriteQueues and WriteRequests against
	// upstreamqs.WriteDebugText of upstream's Dump.
	Text string
}

type queueState struct {
	NextDispatchR      string
	Waiting, Executing int
}

// step is the state after one event.
type step struct {
	Event string
	State setState
}

// recorder wraps an engine and records its state after every event.
type recorder struct {
	scenario.Engine
	snap  func() setState
	steps []step
}

func (r *recorder) record(format string, args ...any) {
	r.steps = append(r.steps, step{Event: fmt.Sprintf(format, args...), State: r.snap()})
}

func (r *recorder) Start(s *scenario.Scenario, h scenario.Host) error {
	if err := r.Engine.Start(s, h); err != nil {
		return err
	}
	r.record("start")
	return nil
}

func (r *recorder) Arrive(now time.Duration, i int) scenario.Admission {
	a := r.Engine.Arrive(now, i)
	r.record("%v: arrival of request %d", now, i)
	return a
}

func (r *recorder) Complete(now time.Duration, i int) {
	r.Engine.Complete(now, i)
	r.record("%v: completion of request %d", now, i)
}

func (r *recorder) Expire(now time.Duration, i int) bool {
	ok := r.Engine.Expire(now, i)
	r.record("%v: wait limit of request %d", now, i)
	return ok
}

func (r *recorder) Fire(now time.Duration, token int) {
	r.Engine.Fire(now, token)
	r.record("%v: final-seat release", now) // tokens differ between engines
}

func (r *recorder) Reconfigure(now time.Duration, c scenario.Config) error {
	err := r.Engine.Reconfigure(now, c)
	r.record("%v: reconfiguration to %+v", now, c)
	return err
}

// recordUpstream and recordOurs wrap the engines compared; withText adds
// the dump text to every recorded state (the costly part).
func recordUpstream(withText bool) *recorder {
	e := upstreamqs.New()
	return &recorder{Engine: e, snap: func() setState { return upstreamState(e, withText) }}
}

func recordOurs(withText bool) *recorder {
	e := newOursEngine()
	r := &recorder{Engine: e}
	r.snap = func() setState {
		return oursState(e.(scenario.Inspector).QueueSet(), withText)
	}
	return r
}

func upstreamState(e *upstreamqs.Engine, withText bool) setState {
	d := e.Dump()
	st := setState{R: e.CurrentR().String(), RobinIndex: e.RobinIndex()}
	for i := range d.Queues {
		q := &d.Queues[i]
		st.Queues = append(st.Queues, queueState{NextDispatchR: q.NextDispatchR, Waiting: len(q.Requests), Executing: q.ExecutingRequests})
		canonicalUpstream(q.RequestsExecuting)
	}
	if withText {
		canonicalUpstream(d.QueuelessExecutingRequests)
		var b bytes.Buffer
		if err := upstreamqs.WriteDebugText(&b, "scenario", e.IsIdle(), d); err != nil {
			panic(err)
		}
		st.Text = b.String()
	}
	return st
}

func oursState(qs *fairqueue.QueueSet, withText bool) setState {
	d := qs.Dump()
	st := setState{R: d.CurrentR.String(), RobinIndex: d.RobinIndex}
	for i := range d.Queues {
		q := &d.Queues[i]
		st.Queues = append(st.Queues, queueState{NextDispatchR: q.NextDispatchR.String(), Waiting: len(q.Waiting), Executing: len(q.Executing)})
		canonicalOurs(q.Executing)
	}
	if withText {
		canonicalOurs(d.QueuelessExecuting)
		var b bytes.Buffer
		for _, write := range []func(io.Writer) error{d.WritePriorityLevel, d.WriteQueues, d.WriteRequests} {
			if err := write(&b); err != nil {
				panic(err)
			}
		}
		st.Text = b.String()
	}
	return st
}

// Upstream keeps executing requests in a set, so their order in its dump is
// random; both dumps list them by start time, then request index.
func canonicalUpstream(rs []debug.RequestDump) {
	slices.SortStableFunc(rs, func(a, b debug.RequestDump) int {
		return cmp.Or(a.StartTime.Compare(b.StartTime), cmp.Compare(atoi(a.FlowDistinguisher), atoi(b.FlowDistinguisher)))
	})
}

func canonicalOurs(rs []fairqueue.RequestDump) {
	slices.SortStableFunc(rs, func(a, b fairqueue.RequestDump) int {
		return cmp.Or(a.StartTime.Compare(b.StartTime), cmp.Compare(atoi(a.FlowDistinguisher), atoi(b.FlowDistinguisher)))
	})
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// firstStateDiff returns the index of the first step whose event or state
// differs, with an explanation, or -1.
func firstStateDiff(up, ours []step) (int, string) {
	for i := range max(len(up), len(ours)) {
		switch {
		case i >= len(up):
			return i, fmt.Sprintf("fairqueue has an extra step %q", ours[i].Event)
		case i >= len(ours):
			return i, fmt.Sprintf("upstream has an extra step %q", up[i].Event)
		case up[i].Event != ours[i].Event:
			return i, fmt.Sprintf("step %d is %q upstream, %q in fairqueue", i, up[i].Event, ours[i].Event)
		}
		if a, b := &up[i].State, &ours[i].State; a.R == b.R && a.RobinIndex == b.RobinIndex && a.Text == b.Text && slices.Equal(a.Queues, b.Queues) {
			continue
		}
		if diff := gocmp.Diff(up[i].State, ours[i].State); diff != "" {
			return i, fmt.Sprintf("state after step %d (%s) differs (-upstream +fairqueue):\n%s", i, up[i].Event, diff)
		}
	}
	return -1, ""
}
