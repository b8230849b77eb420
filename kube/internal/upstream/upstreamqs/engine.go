package upstreamqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/fairqueue/scenario"
)

// Epoch is the wall-clock instant that scenario time 0 maps to.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// setName is the queue set's name, as fairqueue's scenario engine names it.
const setName = "scenario"

var silenceOnce sync.Once

// Engine replays a scenario through upstream's QueueSet. It implements
// scenario.Engine; use a new Engine for each run. It is not safe for
// concurrent use, and starts no goroutines.
type Engine struct {
	s     *scenario.Scenario
	h     scenario.Host
	clk   *clock
	qs    fq.QueueSet
	cfg   scenario.Config
	reqs  []fq.Request
	stops []context.CancelFunc
	notes []fq.QueueNoteFn
	// expiring is the index of the request being ejected, whose
	// QueueNoteFn(false) is not a dispatch; ejected records that call.
	expiring int
	ejected  bool
	fires    []eventclock.EventFunc
	// dispatched lists the requests dispatched during the current call,
	// for OnRequestDispatched once it returns.
	dispatched []int
}

// New returns an Engine ready for scenario.Run.
func New() *Engine {
	silenceOnce.Do(func() { klog.SetLogger(logr.Discard()) })
	return &Engine{expiring: -1}
}

// Start implements scenario.Engine.
func (e *Engine) Start(s *scenario.Scenario, h scenario.Host) error {
	errs := []error{onlyUpstreamOptions("config", s.Config)}
	for i, rc := range s.Reconfigurations {
		errs = append(errs, onlyUpstreamOptions(fmt.Sprintf("reconfigurations[%d].config", i), rc.Config))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	e.s, e.h = s, h
	e.clk = &clock{e: e}
	n := len(s.Requests)
	e.reqs = make([]fq.Request, n)
	e.stops = make([]context.CancelFunc, n)
	e.notes = make([]fq.QueueNoteFn, n)
	for i := range n {
		e.notes[i] = func(inQueue bool) {
			if inQueue {
				return
			}
			if i == e.expiring {
				e.ejected = true
				return
			}
			e.dispatched = append(e.dispatched, i)
			e.h.Dispatched(i)
		}
	}
	completer, err := queueset.NewQueueSetFactory(e.clk).BeginConstruction(queuingConfig(s.Config),
		metrics.RatioedGaugePair{RequestsWaiting: noopGauge{}, RequestsExecuting: noopGauge{}}, noopGauge{}, noopGauge{})
	if err != nil {
		return fmt.Errorf("upstreamqs: %w", err)
	}
	e.cfg = s.Config
	e.qs = completer.Complete(dispatchingConfig(s.Config))
	return nil
}

// onlyUpstreamOptions rejects c if it asks for a fairslice fix that
// upstream's QueueSet does not have, rather than silently running without
// it.
func onlyUpstreamOptions(where string, c scenario.Config) error {
	var errs []error
	for _, name := range c.Options() {
		errs = append(errs, fmt.Errorf("upstreamqs: %s: %s is a fairslice option; Kubernetes' QueueSet has no such option (remove the field to run it through upstream)", where, name))
	}
	return errors.Join(errs...)
}

func queuingConfig(c scenario.Config) fq.QueuingConfig {
	return fq.QueuingConfig{
		Name:             setName,
		DesiredNumQueues: c.Queues,
		QueueLengthLimit: c.QueueLengthLimit,
		HandSize:         c.HandSize,
	}
}

func dispatchingConfig(c scenario.Config) fq.DispatchingConfig {
	return fq.DispatchingConfig{ConcurrencyLimit: c.ConcurrencyLimit, ConcurrencyDenominator: max(c.ConcurrencyLimit, 1)}
}

// Arrive implements scenario.Engine.
func (e *Engine) Arrive(now time.Duration, i int) scenario.Admission {
	e.clk.now = now
	req := e.s.Requests[i]
	we := fcrequest.WorkEstimate{
		InitialSeats:      uint64(req.InitialSeats),
		FinalSeats:        uint64(req.FinalSeats),
		AdditionalLatency: req.AdditionalLatency,
	}
	ctx, stop := context.WithCancel(context.Background())
	fd := strconv.Itoa(i)
	r, _ := e.qs.StartRequest(ctx, &we, req.Hash, fd, scenario.FlowSchemaName, nil, nil, e.notes[i])
	if r == nil {
		stop()
		reason := scenario.ReasonConcurrencyLimit
		if e.cfg.Queues > 0 {
			reason = scenario.ReasonQueueFull
		}
		return scenario.Admission{Queue: -1, Rejected: true, Reason: reason}
	}
	e.reqs[i], e.stops[i] = r, stop
	defer e.noteDispatched()
	if e.cfg.Queues <= 0 {
		e.dispatched = append(e.dispatched, i)
		e.h.Dispatched(i)
		return scenario.Admission{Queue: -1}
	}
	return scenario.Admission{Queue: e.queueOf(fd)}
}

// noteDispatched tells the QueueSet about the requests dispatched during
// the call that just returned, as the APF filter does when a dispatched
// request starts executing (queueset.OnRequestDispatched, which upstream's
// Dump counts as Dispatched). The filter does so from the request's own
// goroutine right after dispatch; here it happens before the next event.
func (e *Engine) noteDispatched() {
	for _, i := range e.dispatched {
		queueset.OnRequestDispatched(e.reqs[i])
	}
	e.dispatched = e.dispatched[:0]
}

// queueOf finds the queue holding (waiting or executing) the request whose
// flow distinguisher is fd.
func (e *Engine) queueOf(fd string) int {
	d := e.qs.Dump(false)
	for qi, q := range d.Queues {
		for _, r := range q.Requests {
			if r.FlowDistinguisher == fd {
				return qi
			}
		}
		for _, r := range q.RequestsExecuting {
			if r.FlowDistinguisher == fd {
				return qi
			}
		}
	}
	e.h.Fail(fmt.Errorf("upstreamqs: request %s admitted but found in no queue", fd))
	return -1
}

// Complete implements scenario.Engine.
func (e *Engine) Complete(now time.Duration, i int) {
	e.clk.now = now
	e.reqs[i].Finish(func() {})
	e.stops[i]()
	e.noteDispatched()
}

// Expire implements scenario.Engine.
func (e *Engine) Expire(now time.Duration, i int) bool {
	e.clk.now = now
	e.expiring, e.ejected = i, false
	e.stops[i]()
	e.reqs[i].Finish(func() {
		e.h.Fail(fmt.Errorf("upstreamqs: request %d executed while being ejected", i))
	})
	e.expiring = -1
	e.noteDispatched()
	return e.ejected
}

// Fire implements scenario.Engine.
func (e *Engine) Fire(now time.Duration, token int) {
	e.clk.now = now
	f := e.fires[token]
	e.fires[token] = nil
	f(e.clk.Now())
	e.noteDispatched()
}

// Reconfigure implements scenario.Engine.
func (e *Engine) Reconfigure(now time.Duration, c scenario.Config) error {
	if err := onlyUpstreamOptions("config", c); err != nil {
		return err
	}
	e.clk.now = now
	completer, err := e.qs.BeginConfigChange(queuingConfig(c))
	if err != nil {
		return fmt.Errorf("upstreamqs: %w", err)
	}
	e.cfg = c
	completer.Complete(dispatchingConfig(c))
	e.noteDispatched()
	return nil
}

// clock is an eventclock.Interface whose time is the runner's and whose
// events are scheduled through the runner.
type clock struct {
	e   *Engine
	now time.Duration
}

func (c *clock) Now() time.Time                  { return Epoch.Add(c.now) }
func (c *clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Sleep is never called by the QueueSet; a simulated clock cannot block.
func (c *clock) Sleep(time.Duration) { panic("upstreamqs: Sleep on a simulated clock") }

func (c *clock) EventAfterDuration(f eventclock.EventFunc, d time.Duration) {
	c.EventAfterTime(f, c.Now().Add(d))
}

func (c *clock) EventAfterTime(f eventclock.EventFunc, t time.Time) {
	at := max(t.Sub(Epoch), c.now)
	c.e.fires = append(c.e.fires, f)
	c.e.h.Schedule(at, len(c.e.fires)-1)
}

// noopGauge satisfies metrics.Gauge and metrics.RatioedGauge.
type noopGauge struct{}

func (noopGauge) Set(float64)            {}
func (noopGauge) Inc()                   {}
func (noopGauge) Dec()                   {}
func (noopGauge) Add(float64)            {}
func (noopGauge) SetToCurrentTime()      {}
func (noopGauge) SetDenominator(float64) {}

var (
	_ scenario.Engine      = (*Engine)(nil)
	_ eventclock.Interface = (*clock)(nil)
	_ metrics.RatioedGauge = noopGauge{}
)
