package flowcontrol

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"k8s.io/apiserver/pkg/server/httplog"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
)

// httpLogVerbosity is the klog verbosity from which upstream's
// httplog.WithLogging logs requests (and so keeps their key-value pairs).
const httpLogVerbosity = 3

// observer turns the apf.Controller's events into calls of upstream's own
// metrics functions and ratioed gauges (k8s.io/apiserver
// pkg/util/flowcontrol/metrics), where upstream's queue set and controller
// make them, and calls the filter's queueNoteFn. The apf.Controller calls
// it with the request's level lock held, so the events of one level are
// serialized.
type observer struct {
	c      *Controller
	mu     sync.Mutex // writers of levels
	levels atomic.Pointer[map[string]*levelGauges]
}

// levelGauges are upstream's per-level ratioed gauges and the seat
// counts behind the seat-demand gauge.
type levelGauges struct {
	waiting, executing, execSeats, demand metrics.RatioedGauge
	seatsInUse, seatsWaiting              atomic.Int64
}

func newObserver(c *Controller) *observer {
	o := &observer{c: c}
	o.levels.Store(&map[string]*levelGauges{})
	return o
}

func (o *observer) level(pl string) *levelGauges {
	if g := (*o.levels.Load())[pl]; g != nil {
		return g
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	old := *o.levels.Load()
	if g := old[pl]; g != nil {
		return g
	}
	lv := []string{pl}
	pair := metrics.RatioedGaugeVecPhasedElementPair(metrics.PriorityLevelConcurrencyGaugeVec, 1, 1, lv)
	g := &levelGauges{
		waiting: pair.RequestsWaiting, executing: pair.RequestsExecuting,
		execSeats: metrics.PriorityLevelExecutionSeatsGaugeVec.NewForLabelValuesSafe(0, 1, lv),
		demand:    metrics.ApiserverSeatDemands.NewForLabelValuesSafe(0, 1, lv),
	}
	next := make(map[string]*levelGauges, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[pl] = g
	o.levels.Store(&next)
	return g
}

func (g *levelGauges) setDemand() {
	g.demand.Set(float64(g.seatsInUse.Load() + g.seatsWaiting.Load()))
}

// callOf returns the Handle call whose request ev is about, nil if the
// event carries no request. Every request the apf.Controller sees is the
// first field of a call.
func callOf(ev *apf.RequestEvent) *call {
	if ev.Request == nil {
		return nil
	}
	return (*call)(unsafe.Pointer(ev.Request))
}

// ctx is the context of k's request, for the metrics that take one.
func ctxOf(k *call) context.Context {
	if k != nil && k.ctx != nil {
		return k.ctx
	}
	return context.Background()
}

// gauges returns the gauges of ev's priority level, remembered in k so
// that the level is looked up once per request.
func (o *observer) gauges(k *call, ev *apf.RequestEvent) *levelGauges {
	if k == nil {
		return o.level(ev.PriorityLevel)
	}
	if k.g == nil {
		k.g = o.level(ev.PriorityLevel)
	}
	return k.g
}

// Estimated implements apf.Observer; upstream's filter observes the
// estimate itself.
func (o *observer) Estimated(apf.RequestEvent, fairqueue.WorkEstimate) {}

// Enqueued implements apf.Observer.
func (o *observer) Enqueued(ev apf.RequestEvent, queueLength int) {
	k := callOf(&ev)
	if k != nil && k.queueNote != nil {
		k.queueNote(true)
	}
	if !upstreamMetrics {
		return
	}
	ctx := ctxOf(k)
	// Upstream samples the queue's length before the request joins it.
	metrics.ObserveQueueLength(ctx, ev.PriorityLevel, ev.FlowSchema, queueLength-1)
	metrics.AddRequestsInQueues(ctx, ev.PriorityLevel, ev.FlowSchema, 1)
	metrics.AddSeatsInQueues(ctx, ev.PriorityLevel, ev.FlowSchema, ev.Seats)
	g := o.gauges(k, &ev)
	g.waiting.Add(1)
	g.seatsWaiting.Add(int64(ev.Seats))
	g.setDemand()
}

// dequeued reports a queued request leaving its queue (dispatched or
// rejected); it returns the level's gauges (nil without metrics).
func (o *observer) dequeued(k *call, ev *apf.RequestEvent) *levelGauges {
	if k != nil && k.queueNote != nil {
		k.queueNote(false)
	}
	if !upstreamMetrics {
		return nil
	}
	ctx := ctxOf(k)
	metrics.AddRequestsInQueues(ctx, ev.PriorityLevel, ev.FlowSchema, -1)
	metrics.AddSeatsInQueues(ctx, ev.PriorityLevel, ev.FlowSchema, -ev.Seats)
	g := o.gauges(k, ev)
	g.waiting.Add(-1)
	g.seatsWaiting.Add(-int64(ev.Seats))
	return g
}

// Dispatched implements apf.Observer. The wait it carries is the one
// Handle reports to the wait-duration histogram.
func (o *observer) Dispatched(ev apf.RequestEvent) {
	k := callOf(&ev)
	if k != nil {
		k.wait = ev.Wait
	}
	if ev.Queued {
		o.dequeued(k, &ev)
	}
	if !upstreamMetrics {
		return
	}
	ctx := ctxOf(k)
	metrics.AddRequestsExecuting(ctx, ev.PriorityLevel, ev.FlowSchema, 1)
	metrics.AddSeatConcurrencyInUse(ev.PriorityLevel, ev.FlowSchema, ev.Seats)
	g := o.gauges(k, &ev)
	g.executing.Add(1)
	g.execSeats.Add(float64(ev.Seats))
	g.seatsInUse.Add(int64(ev.Seats))
	g.setDemand()
}

// Rejected implements apf.Observer. The wait it carries is the one
// Handle reports to the wait-duration histogram.
func (o *observer) Rejected(ev apf.RequestEvent, reason fairqueue.Reason) {
	k := callOf(&ev)
	if k != nil {
		k.wait = ev.Wait
	}
	if upstreamMetrics {
		metrics.AddReject(ctxOf(k), ev.PriorityLevel, ev.FlowSchema, string(reason))
	}
	if ev.Queued {
		if g := o.dequeued(k, &ev); g != nil {
			g.setDemand()
		}
	}
}

// Finished implements apf.Observer: the execution duration is the time
// from dispatch to Finish, as apf measured it. Handle calls Finish before
// it returns, so the call (and its context) is still the request's.
func (o *observer) Finished(ev apf.RequestEvent, execution time.Duration) {
	k := callOf(&ev)
	ctx := ctxOf(k)
	// Upstream's Handle adds the execution time to the request's HTTP log
	// line, which httplog.WithLogging keeps only at klog verbosity 3 and
	// up; checking first spares boxing the duration otherwise.
	if klog.V(httpLogVerbosity).Enabled() {
		httplog.AddKeyValue(ctx, "apf_execution_time", execution)
	}
	if !upstreamMetrics {
		return
	}
	metrics.ObserveExecutionDuration(ctx, ev.PriorityLevel, ev.FlowSchema, execution)
	metrics.AddRequestsExecuting(ctx, ev.PriorityLevel, ev.FlowSchema, -1)
	o.gauges(k, &ev).executing.Add(-1)
}

// SeatsReleased implements apf.Observer. For a request with a final
// phase this comes after Handle returned; its call is then not reused
// (call.lingers), so its gauges are still at hand.
func (o *observer) SeatsReleased(ev apf.RequestEvent) {
	if !upstreamMetrics {
		return
	}
	metrics.AddSeatConcurrencyInUse(ev.PriorityLevel, ev.FlowSchema, -ev.Seats)
	g := o.gauges(callOf(&ev), &ev)
	g.execSeats.Add(-float64(ev.Seats))
	g.seatsInUse.Add(-int64(ev.Seats))
	g.setDemand()
}

// LevelLimits implements apf.Observer: upstream sets these at every
// configuration change and borrowing adjustment.
func (o *observer) LevelLimits(pl string, l apf.Limits) {
	g := o.level(pl)
	g.waiting.SetDenominator(float64(l.QueueCapacity))
	g.executing.SetDenominator(float64(l.ConcurrencyDenominator))
	g.execSeats.SetDenominator(float64(l.ConcurrencyDenominator))
	g.demand.SetDenominator(float64(l.ConcurrencyDenominator))
	metrics.SetPriorityLevelConfiguration(pl, l.Nominal, l.Lower, l.Upper)
	metrics.NotePriorityLevelConcurrencyAdjustment(pl, l.DemandHighWatermark, l.DemandAverage, l.DemandStdDev, l.DemandSmoothed, l.Target, l.Current)
	metrics.SetFairFrac(l.FairFrac)
	if l.MaxSeats > 0 {
		o.c.SetMaxSeats(pl, l.MaxSeats)
	}
}

// LevelRemoved implements apf.Observer.
func (o *observer) LevelRemoved(pl string) { o.c.ForgetPriorityLevel(pl) }

// DispatchStats implements apf.DispatchObserver.
func (o *observer) DispatchStats(pl string, s fairqueue.DispatchStats) {
	if !upstreamMetrics {
		return
	}
	metrics.SetDispatchMetrics(pl, s.R.Float(), s.S.Float(), s.SMin.Float(), s.SMax.Float(), s.DiscountedSMin.Float(), s.DiscountedSMax.Float())
	metrics.SetCurrentR(pl, s.R.Float())
}

// NoAccommodation implements apf.DispatchObserver.
func (o *observer) NoAccommodation(ev apf.RequestEvent) {
	if !upstreamMetrics {
		return
	}
	metrics.AddDispatchWithNoAccommodation(ev.PriorityLevel, ev.FlowSchema)
}
