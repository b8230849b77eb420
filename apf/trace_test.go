package apf

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

// A decision trace: a random configuration and request sequence driven
// through a Controller on a fake clock from one goroutine (waiters in
// their own, each settled before the next step), recording every
// decision per priority level. Two controllers that decide alike give
// equal traces.

// fataler is what runTrace needs of a *testing.T or *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// traceOp is one step: advance the clock by Gap, then one request of
// group Level from user User taking Seats for Hold once dispatched.
type traceOp struct {
	Gap         time.Duration
	Level, User int
	Seats       int
	Hold        time.Duration
}

// traceConfigYAML returns levels l0..l(n-1), each reached by group g<i>,
// with the given parameters; a reject-type level has queues 0.
func traceConfigYAML(levels []traceLevel) string {
	var b strings.Builder
	for i, l := range levels {
		resp := "type: Reject"
		if l.Queues > 0 {
			resp = fmt.Sprintf("type: Queue\n      queuing: {queues: %d, handSize: %d, queueLengthLimit: %d}", l.Queues, l.Hand, l.QLL)
		}
		borrow := ""
		if l.Borrow >= 0 {
			borrow = fmt.Sprintf("\n    borrowingLimitPercent: %d", l.Borrow)
		}
		fmt.Fprintf(&b, `---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: l%[1]d}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: %[2]d
    lendablePercent: %[3]d%[4]s
    limitResponse:
      %[5]s
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: l%[1]d}
spec:
  priorityLevelConfiguration: {name: l%[1]d}
  matchingPrecedence: %[6]d
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: g%[1]d}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`, i, l.Shares, l.Lendable, borrow, resp, 100+i)
	}
	return b.String()
}

// traceLevel are one level's parameters (Borrow < 0: unset).
type traceLevel struct {
	Shares, Lendable, Borrow int
	Queues, Hand, QLL        int
}

// traceCase is a whole random input.
type traceCase struct {
	ServerCL int
	Levels   []traceLevel
	Ops      []traceOp
	Exempt   []bool // per op: sent by system:masters (exempt) instead
}

// randomTraceCase draws a case from r.
func randomTraceCase(r *rand.Rand) traceCase {
	tc := traceCase{ServerCL: 1 + r.IntN(40)}
	for range 1 + r.IntN(4) {
		l := traceLevel{Shares: 1 + r.IntN(100), Lendable: r.IntN(101), Borrow: r.IntN(202) - 1}
		if r.IntN(5) > 0 {
			l.Queues = 1 + r.IntN(16)
			l.Hand = 1 + r.IntN(min(l.Queues, 8))
			l.QLL = 1 + r.IntN(10)
		}
		tc.Levels = append(tc.Levels, l)
	}
	for range 50 + r.IntN(250) {
		tc.Ops = append(tc.Ops, traceOp{
			Gap: time.Duration(r.IntN(400)) * time.Millisecond, Level: r.IntN(len(tc.Levels) + 1),
			User: r.IntN(6), Seats: 1 + r.IntN(3), Hold: time.Duration(1+r.IntN(3000)) * time.Millisecond,
		})
		tc.Exempt = append(tc.Exempt, r.IntN(20) == 0)
	}
	return tc
}

// traceRecorder is the Observer of a trace: events per priority level.
type traceRecorder struct {
	NopObserver
	clk *fakeClock

	mu         sync.Mutex
	lines      map[string][]string
	settle     map[*Request]chan struct{}
	ids        map[*Request]int
	dispatched []int // ids, since the driver last looked
}

func (o *traceRecorder) add(pl, s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines[pl] = append(o.lines[pl], s)
}

func (o *traceRecorder) settled(req *Request) {
	o.mu.Lock()
	ch := o.settle[req]
	o.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (o *traceRecorder) id(req *Request) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ids[req]
}

func (o *traceRecorder) Enqueued(ev RequestEvent, n int) {
	o.add(ev.PriorityLevel, fmt.Sprintf("enqueue %d len=%d", o.id(ev.Request), n))
	o.settled(ev.Request)
}

func (o *traceRecorder) Dispatched(ev RequestEvent) {
	id := o.id(ev.Request)
	o.add(ev.PriorityLevel, fmt.Sprintf("dispatch %d at=%v wait=%v seats=%d", id, o.clk.Now().UnixMilli(), ev.Wait, ev.Seats))
	o.mu.Lock()
	o.dispatched = append(o.dispatched, id)
	o.mu.Unlock()
	o.settled(ev.Request)
}

func (o *traceRecorder) Rejected(ev RequestEvent, reason fairqueue.Reason) {
	o.add(ev.PriorityLevel, fmt.Sprintf("reject %d %s", o.id(ev.Request), reason))
	o.settled(ev.Request)
}

// LevelLimits records the limits as the golden traces were written, before
// Limits had Borrowed: with no SeatPolicy it is Current, and a trace
// where it is not says so (and so differs from the golden file).
func (o *traceRecorder) LevelLimits(pl string, l Limits) {
	if l.Borrowed != l.Current {
		o.add(pl, fmt.Sprintf("borrowed %d differs from current %d", l.Borrowed, l.Current))
	}
	o.add(pl, strings.Replace(fmt.Sprintf("limits %+v", l), fmt.Sprintf(" Borrowed:%d", l.Borrowed), "", 1))
}

// runTrace drives tc through a controller built with opts (its
// ServerConcurrencyLimit, Clock and Observer are set here) and returns the
// decisions, level by level in name order.
func runTrace(t fataler, tc traceCase, opts Options) string {
	t.Helper()
	return runTraceWith(t, tc, opts, nil)
}

// runTraceWith is runTrace calling check, if not nil, after each step.
func runTraceWith(t fataler, tc traceCase, opts Options, check func(c *Controller, step int)) string {
	t.Helper()
	clk := newFakeClock()
	rec := &traceRecorder{clk: clk, lines: map[string][]string{}, settle: map[*Request]chan struct{}{}, ids: map[*Request]int{}}
	opts.ServerConcurrencyLimit, opts.Clock, opts.Observer = tc.ServerCL, clk, rec
	cfg, err := flowschema.Decode([]byte(traceConfigYAML(tc.Levels)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		tk  Ticket
		err error
	}
	results := map[int]chan result{}
	taken := map[int]bool{}
	holds := map[int]time.Duration{}
	type finish struct {
		at time.Time
		id int
	}
	var finishes []finish
	schedule := func() {
		rec.mu.Lock()
		ids := rec.dispatched
		rec.dispatched = nil
		rec.mu.Unlock()
		for _, id := range ids {
			finishes = append(finishes, finish{clk.Now().Add(holds[id]), id})
		}
		slices.SortStableFunc(finishes, func(a, b finish) int { return a.at.Compare(b.at) })
	}
	ticket := func(id int) (Ticket, bool) {
		taken[id] = true
		select {
		case r := <-results[id]:
			return r.tk, r.err == nil
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d: dispatched but Wait did not return within 10s", id)
			return Ticket{}, false
		}
	}
	// advance moves the clock to end, finishing due requests on the way.
	advance := func(end time.Time) {
		for len(finishes) > 0 && !finishes[0].at.After(end) {
			f := finishes[0]
			finishes = finishes[1:]
			clk.Step(f.at.Sub(clk.Now()))
			if tk, ok := ticket(f.id); ok {
				tk.Finish()
			}
			schedule()
		}
		clk.Step(end.Sub(clk.Now()))
		schedule()
	}
	for i, op := range tc.Ops {
		advance(clk.Now().Add(op.Gap))
		var req *Request
		if tc.Exempt[i] {
			req = masters(fmt.Sprint("admin-", op.User))
		} else {
			req = &Request{User: User{Name: fmt.Sprint("u", op.User), Groups: []string{fmt.Sprint("g", op.Level)}},
				Info: RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "pods", Namespace: "ns"}}
		}
		settle := make(chan struct{}, 1)
		rec.mu.Lock()
		rec.ids[req], rec.settle[req] = i, settle
		rec.mu.Unlock()
		holds[i] = op.Hold
		res := make(chan result, 1)
		results[i] = res
		seats := op.Seats
		go func() {
			tk, err := c.Wait(context.Background(), req, func(_ *Classification, maxSeats uint64) fairqueue.WorkEstimate {
				if maxSeats > 0 {
					return fairqueue.WorkEstimate{InitialSeats: uint64(min(seats, int(maxSeats)))}
				}
				return fairqueue.WorkEstimate{InitialSeats: uint64(seats)}
			})
			res <- result{tk, err}
		}()
		select {
		case <-settle:
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d: no decision within 10s", i)
		}
		c.Stats() // every level's lock once: the arrival has completed
		schedule()
		if check != nil {
			check(c, i)
		}
	}
	advance(clk.Now().Add(10 * time.Second))
	rec.mu.Lock()
	var b strings.Builder
	names := make([]string, 0, len(rec.lines))
	for pl := range rec.lines {
		names = append(names, pl)
	}
	slices.Sort(names)
	for _, pl := range names {
		fmt.Fprintf(&b, "== %s\n%s\n", pl, strings.Join(rec.lines[pl], "\n"))
	}
	rec.mu.Unlock()
	c.Close()
	for id, ch := range results {
		if taken[id] {
			continue
		}
		select {
		case r := <-ch:
			if r.err == nil {
				ch <- r // dispatched, not finished: finish it below
				if tk, ok := ticket(id); ok {
					tk.Finish()
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d: Wait did not return within 10s of Close", id)
		}
	}
	return b.String()
}
