package apfcompare

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/util/flowcontrol"
	testeventclock "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/testing/eventclock"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

var start = time.Unix(1_800_000_000, 0).UTC()

// reqSpec is one request of a scenario. Name is unique ("r<id>") so that
// the debug dumps with request details identify it.
type reqSpec struct {
	User      string   `json:"user"`
	Groups    []string `json:"groups"`
	Namespace string   `json:"namespace"`
	Seats     uint64   `json:"seats"`
}

func (s *reqSpec) info(id int) apf.RequestInfo {
	name := "r" + itoa(id)
	return apf.RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1",
		Namespace: s.Namespace, Resource: "pods", Name: name,
		Path: "/api/v1/namespaces/" + s.Namespace + "/pods/" + name}
}

// outcome is what happened to a request, as both sides report it.
type outcome struct {
	FlowSchema, PriorityLevel, Distinguisher string
	// State: "waiting", "executing", "done", or "rejected:<reason>".
	State string
}

// driver runs requests through one implementation, one event at a time:
// each method returns once the implementation has settled.
type driver interface {
	arrive(id int, s *reqSpec)
	finish(id int)
	cancel(id int)
	advance(d time.Duration)
	// adjust runs one periodic borrowing adjustment.
	adjust()
	outcome(id int) outcome
	dispatchOrder() []int
	// dumps returns the text of the three debug endpoints, each with its
	// rows sorted (upstream lists levels in map order).
	dumps() [3]string
	close()
}

var (
	_ driver = (*upstreamDriver)(nil)
	_ driver = (*oursDriver)(nil)
)

// slot is a request in flight in a driver.
type slot struct {
	ctx      context.Context
	cancelFn context.CancelFunc
	release  chan struct{}
	entered  chan struct{}
	returned chan struct{}

	mu       sync.Mutex
	out      outcome
	enqueued bool
	dequeued bool
}

func newSlot() *slot {
	ctx, cancel := context.WithCancel(context.Background())
	return &slot{ctx: ctx, cancelFn: cancel, release: make(chan struct{}), entered: make(chan struct{}), returned: make(chan struct{})}
}

func (s *slot) flags() (enq, deq bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enqueued, s.dequeued
}

// settle waits until the request is executing, has returned, or waits in a
// queue (enqueued, not dequeued once the implementation's lock, taken by
// dump, has been released).
func settle(tb testing.TB, s *slot, dump func()) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-s.entered:
			return
		case <-s.returned:
			return
		default:
		}
		if enq, _ := s.flags(); enq {
			dump()
			if _, deq := s.flags(); !deq {
				return
			}
		}
		if time.Now().After(deadline) {
			tb.Fatal("request did not settle within 20s")
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// settleArrival settles a new request (see settle), records it as waiting
// if it neither executes nor has returned, and then waits, through
// awaitDispatched, for any earlier request the arrival dispatched (an
// arrival changes which queue wins).
func settleArrival(tb testing.TB, sl *slot, dump, awaitDispatched func()) {
	settle(tb, sl, dump)
	select {
	case <-sl.returned:
	case <-sl.entered:
	default:
		sl.mu.Lock()
		sl.out.State = "waiting"
		sl.mu.Unlock()
	}
	awaitDispatched()
}

func waitClosed(tb testing.TB, c chan struct{}) {
	select {
	case <-c:
	case <-time.After(20 * time.Second):
		tb.Fatal("timed out after 20s")
	}
}

// sortedRows sorts the rows after the header.
func sortedRows(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 1 {
		sort.Strings(lines[1:])
	}
	for i := range lines {
		lines[i] = strings.Join(strings.Fields(lines[i]), " ")
	}
	return strings.Join(lines, "\n")
}

// ---- upstream ----

// upstreamDriver drives a controller through utilflowcontrol.Interface:
// upstream's, or kube/flowcontrol's in TestDifferentialInterface.
type upstreamDriver struct {
	tb     testing.TB
	clk    *testeventclock.Fake
	ctl    flowcontrol.Interface
	worker *configWorker
	stop   chan struct{}
	mux    *mux.PathRecorderMux
	queue  map[string]bool // priority levels that queue

	mu    sync.Mutex
	order []int
	slots map[int]*slot
}

var silence sync.Once

// newUpstream starts upstream's controller on a fake clock and digests cfg
// (see newIfcSide).
func newUpstream(tb testing.TB, cfg *flowschema.Config, serverCL int) *upstreamDriver {
	return newIfcSide(tb, cfg, serverCL, false).upstreamDriver
}

func (d *upstreamDriver) digest(id int, s *reqSpec) flowcontrol.RequestDigest {
	ri := s.info(id)
	return flowcontrol.RequestDigest{
		RequestInfo: &genericrequest.RequestInfo{IsResourceRequest: true, Path: ri.Path, Verb: ri.Verb, APIPrefix: ri.APIPrefix,
			APIVersion: ri.APIVersion, Namespace: ri.Namespace, Resource: ri.Resource, Name: ri.Name},
		User: &user.DefaultInfo{Name: s.User, Groups: s.Groups},
	}
}

func (d *upstreamDriver) arrive(id int, s *reqSpec) {
	sl := newSlot()
	dg := d.digest(id, s)
	// The debug dump with details reads the user and request info from
	// the request's context, as the API server's filters put them there.
	sl.ctx = genericrequest.WithRequestInfo(genericrequest.WithUser(sl.ctx, dg.User), dg.RequestInfo)
	d.mu.Lock()
	d.slots[id] = sl
	d.mu.Unlock()
	seats := s.Seats
	go func() {
		defer close(sl.returned)
		d.ctl.Handle(sl.ctx, dg,
			func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, dist string) {
				sl.mu.Lock()
				sl.out = outcome{FlowSchema: fs.Name, PriorityLevel: pl.Name, Distinguisher: dist}
				sl.mu.Unlock()
			},
			func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: seats} },
			func(inQueue bool) {
				sl.mu.Lock()
				if inQueue {
					sl.enqueued = true
				} else {
					sl.dequeued = true
				}
				sl.mu.Unlock()
				if !inQueue {
					d.mu.Lock()
					d.order = append(d.order, id)
					d.mu.Unlock()
				}
			},
			func() {
				sl.mu.Lock()
				sl.out.State = "executing"
				sl.mu.Unlock()
				close(sl.entered)
				<-sl.release
			})
		sl.mu.Lock()
		defer sl.mu.Unlock()
		switch {
		case sl.out.State == "executing":
			sl.out.State = "done"
		case sl.enqueued:
			sl.out.State = "rejected:" + string(fairqueue.ReasonTimeOut)
		case d.queue[sl.out.PriorityLevel]:
			sl.out.State = "rejected:" + string(fairqueue.ReasonQueueFull)
		default:
			sl.out.State = "rejected:" + string(fairqueue.ReasonConcurrencyLimit)
		}
	}()
	settleArrival(d.tb, sl, func() { d.dumps() }, d.quiesce)
}

func (d *upstreamDriver) slot(id int) *slot {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.slots[id]
}

// awaitDispatched waits until every dequeued request has entered execution.
func (d *upstreamDriver) awaitDispatched() { awaitDispatched(d.tb, &d.mu, d.slots) }

// quiesce digests what an event queued for the configuration worker (a
// quiescing level that became idle: upstream reaps it in a digest, where
// apf does at once), then waits for the requests that dispatched.
func (d *upstreamDriver) quiesce() {
	d.worker.drain()
	d.awaitDispatched()
}

func waitEither(tb testing.TB, a, b chan struct{}) {
	select {
	case <-a:
	case <-b:
	case <-time.After(20 * time.Second):
		tb.Fatal("timed out after 20s")
	}
}

func (d *upstreamDriver) finish(id int) {
	s := d.slot(id)
	close(s.release)
	waitClosed(d.tb, s.returned)
	d.quiesce()
}

// cancel ends a waiting request's context. Removing it from its queue can
// let another request be dispatched (a blocked wide head gone), so wait for
// those too, as after finish; otherwise whether they are seen executing
// at the next comparison depends on goroutine scheduling.
func (d *upstreamDriver) cancel(id int) {
	s := d.slot(id)
	s.cancelFn()
	waitClosed(d.tb, s.returned)
	d.quiesce()
}

func (d *upstreamDriver) advance(dt time.Duration) { d.clk.SetTime(d.clk.Now().Add(dt)) }

// upstreamUpdateBorrowing is the configController's periodic borrowing
// adjustment, which upstream runs only from a real-time ticker started by
// Run (every 10 s); the differential test runs it at chosen points of a
// scenario instead. The receiver is a *configController.
//
//go:linkname upstreamUpdateBorrowing k8s.io/apiserver/pkg/util/flowcontrol.(*configController).updateBorrowing
func upstreamUpdateBorrowing(cfgCtlr unsafe.Pointer)

// adjust runs upstream's periodic adjustment and waits for the requests
// it dispatched (queue sets dispatch under their lock in Complete).
func (d *upstreamDriver) adjust() {
	if got := reflect.TypeOf(d.ctl).String(); got != "*flowcontrol.configController" {
		d.tb.Fatalf("upstream controller is a %s, want *flowcontrol.configController", got)
	}
	ctl := d.ctl
	upstreamUpdateBorrowing((*[2]unsafe.Pointer)(unsafe.Pointer(&ctl))[1])
	d.awaitDispatched()
}

func (d *upstreamDriver) outcome(id int) outcome {
	s := d.slot(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out
}

// dispatchOrder is the order of the QueueNoteFn(false) calls, without
// those of requests removed from their queues (upstream makes that call
// for them too, when it removes them).
func (d *upstreamDriver) dispatchOrder() []int {
	d.mu.Lock()
	order := append([]int(nil), d.order...)
	d.mu.Unlock()
	out := []int{}
	for _, id := range order {
		if o := d.outcome(id); o.State == "executing" || o.State == "done" {
			out = append(out, id)
		}
	}
	return out
}

func (d *upstreamDriver) dumps() [3]string {
	var out [3]string
	for i, p := range []string{apf.DebugPathPriorityLevels, apf.DebugPathQueues, apf.DebugPathRequests + "?includeRequestDetails=1"} {
		rec := httptest.NewRecorder()
		d.mux.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		out[i] = sortedRows(rec.Body.String())
	}
	return out
}

func (d *upstreamDriver) close() {
	d.mu.Lock()
	for _, s := range d.slots {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		s.cancelFn()
	}
	slots := d.slots
	d.mu.Unlock()
	// Every Handle returns before the next scenario resets the metrics.
	for _, s := range slots {
		waitClosed(d.tb, s.returned)
	}
	close(d.stop)
	d.worker.close()
}

// ---- fairslice ----

type oursDriver struct {
	tb  testing.TB
	clk *manualClock
	c   *apf.Controller

	mu    sync.Mutex
	order []int
	slots map[int]*slot
	ids   map[*apf.Request]int
	// metrics are the DispatchObserver events, as upstream's metrics.
	metrics dispatchMetrics
	// borrowing are the last LevelLimits events, as upstream's metrics.
	borrowing borrowingMetrics
}

type observer struct {
	apf.NopObserver
	d *oursDriver
}

func (o observer) Enqueued(ev apf.RequestEvent, _ int) {
	if s, _ := o.d.lookup(ev.Request); s != nil {
		s.mu.Lock()
		s.enqueued = true
		s.mu.Unlock()
	}
}

func (o observer) Dispatched(ev apf.RequestEvent) {
	s, id := o.d.lookup(ev.Request)
	if s == nil {
		return
	}
	s.mu.Lock()
	s.dequeued = true
	s.mu.Unlock()
	// Upstream notes dispatches only of requests that were queued.
	if ev.Queued {
		o.d.mu.Lock()
		o.d.order = append(o.d.order, id)
		o.d.mu.Unlock()
	}
}

func (d *oursDriver) lookup(r *apf.Request) (*slot, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.ids[r]
	if !ok {
		return nil, 0
	}
	return d.slots[id], id
}

func newOurs(tb testing.TB, cfg *flowschema.Config, serverCL int) *oursDriver {
	d := &oursDriver{tb: tb, clk: &manualClock{now: start}, slots: map[int]*slot{}, ids: map[*apf.Request]int{},
		metrics:   dispatchMetrics{Virtual: map[string][6]float64{}, NoFit: map[string]float64{}},
		borrowing: borrowingMetrics{Levels: map[string][6]float64{}}}
	// Upstream's periodic adjustment runs on real time; the scenarios run
	// both sides' adjustments as events instead. Lenient: upstream's
	// controller is given the objects alone, with no API server validating
	// them or creating the mandatory ones first.
	c, err := apf.New(cfg, apf.Options{ServerConcurrencyLimit: serverCL, Clock: d.clk, Observer: observer{d: d}, AdjustPeriod: apf.ManualAdjustment, Lenient: true})
	if err != nil {
		tb.Fatal(err)
	}
	d.c = c
	return d
}

func (d *oursDriver) arrive(id int, s *reqSpec) {
	sl := newSlot()
	req := &apf.Request{User: apf.User{Name: s.User, Groups: s.Groups}, Info: s.info(id)}
	d.mu.Lock()
	d.slots[id] = sl
	d.ids[req] = id
	d.mu.Unlock()
	cl := d.c.Classify(req)
	sl.out = outcome{FlowSchema: cl.FlowSchema, PriorityLevel: cl.PriorityLevel, Distinguisher: cl.Distinguisher}
	seats := s.Seats
	go func() {
		defer close(sl.returned)
		t, err := d.c.Wait(sl.ctx, req, func(*apf.Classification, uint64) fairqueue.WorkEstimate {
			return fairqueue.WorkEstimate{InitialSeats: seats}
		})
		if err != nil {
			var rej *apf.RejectedError
			sl.mu.Lock()
			if errors.As(err, &rej) {
				sl.out.State = "rejected:" + string(rej.Reason)
			} else {
				sl.out.State = "error:" + err.Error()
			}
			sl.mu.Unlock()
			return
		}
		sl.mu.Lock()
		sl.out.State = "executing"
		sl.mu.Unlock()
		close(sl.entered)
		<-sl.release
		t.Finish()
		sl.mu.Lock()
		sl.out.State = "done"
		sl.mu.Unlock()
	}()
	settleArrival(d.tb, sl, func() { d.c.Dump() }, d.awaitDispatched)
}

func (d *oursDriver) slot(id int) *slot {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.slots[id]
}

func (d *oursDriver) finish(id int) {
	s := d.slot(id)
	close(s.release)
	waitClosed(d.tb, s.returned)
	d.awaitDispatched()
}

// awaitDispatched waits until every dispatched request has entered
// execution.
func (d *oursDriver) awaitDispatched() { awaitDispatched(d.tb, &d.mu, d.slots) }

// awaitDispatched waits until every slot whose request left its queue for
// execution has entered it (or returned, for one removed by cancellation,
// which upstream also reports as leaving the queue). mu guards slots.
func awaitDispatched(tb testing.TB, mu *sync.Mutex, slots map[int]*slot) {
	mu.Lock()
	all := make([]*slot, 0, len(slots))
	for _, s := range slots {
		all = append(all, s)
	}
	mu.Unlock()
	for _, s := range all {
		if _, deq := s.flags(); deq {
			waitEither(tb, s.entered, s.returned)
		}
	}
}

// cancel is upstreamDriver.cancel's counterpart.
func (d *oursDriver) cancel(id int) {
	s := d.slot(id)
	s.cancelFn()
	waitClosed(d.tb, s.returned)
	d.awaitDispatched()
}

func (d *oursDriver) advance(dt time.Duration) { d.clk.advance(dt) }

func (d *oursDriver) adjust() {
	d.c.AdjustBorrowing(d.clk.Now())
	d.awaitDispatched()
}

func (d *oursDriver) outcome(id int) outcome {
	s := d.slot(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out
}

func (d *oursDriver) dispatchOrder() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int{}, d.order...)
}

func (d *oursDriver) dumps() [3]string {
	ds := d.c.Dump()
	var b [3]strings.Builder
	_ = apf.WritePriorityLevels(&b[0], ds)
	_ = apf.WriteQueues(&b[1], ds)
	_ = apf.WriteRequests(&b[2], ds, true)
	return [3]string{sortedRows(b[0].String()), sortedRows(b[1].String()), sortedRows(b[2].String())}
}

func (d *oursDriver) close() {
	d.mu.Lock()
	for _, s := range d.slots {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		s.cancelFn()
	}
	slots := d.slots
	d.mu.Unlock()
	for _, s := range slots {
		waitClosed(d.tb, s.returned)
	}
	d.c.Close()
}

// manualClock is a fairqueue.Clock moved by hand; scenarios use no final
// seats, so AfterFunc is never called.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) fairqueue.Timer {
	panic("apfcompare: scenarios have no final seats")
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
