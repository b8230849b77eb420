// Package apfmetrics exports the metrics of an apf.Controller to Prometheus
// under upstream Kubernetes' names (k8s.io/apiserver v0.37.2
// pkg/util/flowcontrol/metrics), so that dashboards and alerts written for
// kube-apiserver's API Priority and Fairness work unchanged.
//
// Metrics is an apf.Observer (and apf.DispatchObserver and
// apf.WatchCountObserver): pass it as apf.Options.Observer, then call
// Attach with the Controller for the metrics read at scrape time. Every
// metric of upstream's package is exported, prefixed
// apiserver_flowcontrol_, with upstream's labels, buckets and help texts
// (without the "[ALPHA] "/"[BETA] " prefix component-base adds):
//
//   - BETA: rejected_requests_total, dispatched_requests_total,
//     current_inqueue_requests, current_executing_requests,
//     current_executing_seats, request_wait_duration_seconds,
//     nominal_limit_seats.
//   - From Observer events: current_inqueue_seats,
//     request_queue_length_after_enqueue, request_execution_seconds,
//     work_estimated_seats, lower_limit_seats, upper_limit_seats,
//     current_limit_seats, target_seats, seat_fair_frac,
//     demand_seats_high_watermark, demand_seats_average,
//     demand_seats_stdev, demand_seats_smoothed.
//   - From DispatchObserver events, at each dispatch from a queue (not for
//     exempt or non-queuing levels, as upstream): dispatch_r, latest_s,
//     next_s_bounds{bound=min|max}, next_discounted_s_bounds{bound}, and
//     request_dispatch_no_accommodation_total.
//   - From WatchCountObserver events (the Handler middleware reports them;
//     callers of Wait with their own WorkFunc call
//     Controller.ObserveWatchCount): watch_count_samples.
//   - Read from the Attached Controller at scrape time (Controller.Stats):
//     current_r, R as of the level's last event, which is what upstream's
//     gauge holds; and epoch_advance_total{success="true"}: apf's epoch
//     advance cannot underflow, so success="false" never appears, and the
//     count restarts at 0 if a removed level is configured again.
//   - Timing-ratio histograms: priority_level_seat_utilization
//     {phase="executing"}, priority_level_request_utilization{phase},
//     read_vs_write_current_requests{phase,request_kind} and demand_seats.
//     As upstream's TimingRatioHistogram, each bucket counts the
//     nanoseconds the ratio numerator/denominator spent in it and the sum is
//     the ratio's integral over time in nanoseconds; time comes from the
//     clock given to NewWithClock (time.Now for New), read at every change
//     and at scrape. Numerators and denominators are upstream's: seats and
//     requests executing over Limits.ConcurrencyDenominator, requests
//     waiting over Limits.QueueCapacity, seats in use plus waiting
//     (demand) over the concurrency denominator, and server-wide requests
//     waiting and executing by request kind (readOnly for get, list and
//     watch) over the sums of queues × queue length limit and of nominal
//     seats. Two differences: a ratio with a zero denominator counts as 0
//     when its numerator is 0 (upstream's 0/0 is NaN and makes the sum NaN
//     for good), and read_vs_write_current_requests counts a request as
//     executing from dispatch to Finished and as waiting while queued,
//     where upstream's filter counts around its handler call and queue
//     note.
//
// One upstream quirk is kept: a request removed from its queue (time-out)
// is observed in request_wait_duration_seconds with execute="true", as
// upstream's Handle labels it (it tests whether the request was enqueued,
// not whether it executed).
package apfmetrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
)

const (
	namespace = "apiserver"
	subsystem = "flowcontrol"
	pl        = "priority_level"
	fs        = "flow_schema"
)

var (
	queueLengthBuckets     = []float64{0, 10, 25, 50, 100, 250, 500, 1000}
	durationSecondsBuckets = []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30}
	seatsBuckets           = []float64{1, 2, 4, 8, 16, 32, 64, 100}
	watchCountBuckets      = []float64{0, 1, 10, 100, 1000, 10000}
)

// Metrics holds the Prometheus collectors and implements apf.Observer.
type Metrics struct {
	rejected, dispatched                     *prometheus.CounterVec
	inqueueRequests, inqueueSeats            *prometheus.GaugeVec
	executingRequests, executingSeats        *prometheus.GaugeVec
	waitSeconds, executionSeconds            *prometheus.HistogramVec
	queueLength, estimatedSeats              *prometheus.HistogramVec
	nominal, lower, upper, current, target   *prometheus.GaugeVec
	highWatermark, average, stdDev, smoothed *prometheus.GaugeVec
	fairFrac                                 prometheus.Gauge
	perLevel                                 []*prometheus.GaugeVec

	dispatchR, latestS                 *prometheus.GaugeVec
	nextSBounds, nextDiscountedSBounds *prometheus.GaugeVec
	noAccommodation                    *prometheus.CounterVec
	watchCount                         *prometheus.HistogramVec
	scraped                            *scraped

	seatUtil, reqUtil, demand, readWrite *timingRatioVec

	mu        sync.Mutex        // guards levelCaps
	levelCaps map[string][2]int // per level: nominal seats, queues × queue length limit
}

var (
	_ apf.DispatchObserver   = (*Metrics)(nil)
	_ apf.WatchCountObserver = (*Metrics)(nil)
)

func opts(name, help string) (string, string, string, string) {
	return namespace, subsystem, name, help
}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	ns, sub, n, h := opts(name, help)
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: n, Help: h}, labels)
}

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	ns, sub, n, h := opts(name, help)
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: n, Help: h}, labels)
}

func histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	ns, sub, n, h := opts(name, help)
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: n, Help: h, Buckets: buckets}, labels)
}

// New returns Metrics registered with reg (for example
// prometheus.DefaultRegisterer or a new prometheus.Registry). It fails if
// the names are already registered there.
func New(reg prometheus.Registerer) (*Metrics, error) { return NewWithClock(reg, time.Now) }

// NewWithClock is New with the clock the timing-ratio histograms
// (priority_level_seat_utilization, priority_level_request_utilization,
// demand_seats) read when a value changes and at scrape time; pass the
// Controller's clock's Now to keep both on one time line.
func NewWithClock(reg prometheus.Registerer, now func() time.Time) (*Metrics, error) {
	m := &Metrics{
		rejected:          counter("rejected_requests_total", "Number of requests rejected by API Priority and Fairness subsystem", pl, fs, "reason"),
		dispatched:        counter("dispatched_requests_total", "Number of requests executed by API Priority and Fairness subsystem", pl, fs),
		inqueueRequests:   gauge("current_inqueue_requests", "Number of requests currently pending in queues of the API Priority and Fairness subsystem", pl, fs),
		inqueueSeats:      gauge("current_inqueue_seats", "Number of seats currently pending in queues of the API Priority and Fairness subsystem", pl, fs),
		executingRequests: gauge("current_executing_requests", "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem", pl, fs),
		executingSeats:    gauge("current_executing_seats", "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem", pl, fs),
		waitSeconds:       histogram("request_wait_duration_seconds", "Length of time a request spent waiting in its queue", durationSecondsBuckets, pl, fs, "execute"),
		executionSeconds:  histogram("request_execution_seconds", "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem", durationSecondsBuckets, pl, fs, "type"),
		queueLength:       histogram("request_queue_length_after_enqueue", "Length of queue in the API Priority and Fairness subsystem, as seen by each request after it is enqueued", queueLengthBuckets, pl, fs),
		estimatedSeats:    histogram("work_estimated_seats", "Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness", seatsBuckets, pl, fs),
		nominal:           gauge("nominal_limit_seats", "Nominal number of execution seats configured for each priority level", pl),
		lower:             gauge("lower_limit_seats", "Configured lower bound on number of execution seats available to each priority level", pl),
		upper:             gauge("upper_limit_seats", "Configured upper bound on number of execution seats available to each priority level", pl),
		current:           gauge("current_limit_seats", "current derived number of execution seats available to each priority level", pl),
		target:            gauge("target_seats", "Seat allocation targets", pl),
		highWatermark:     gauge("demand_seats_high_watermark", "High watermark, over last adjustment period, of demand_seats", pl),
		average:           gauge("demand_seats_average", "Time-weighted average, over last adjustment period, of demand_seats", pl),
		stdDev:            gauge("demand_seats_stdev", "Time-weighted standard deviation, over last adjustment period, of demand_seats", pl),
		smoothed:          gauge("demand_seats_smoothed", "Smoothed seat demands", pl),
		fairFrac: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: subsystem, Name: "seat_fair_frac",
			Help: "Fair fraction of server's concurrency to allocate to each priority level that can use it"}),
	}
	m.dispatchR = gauge("dispatch_r", "R(time of last dispatch)", pl)
	m.latestS = gauge("latest_s", "S(most recently dispatched request)", pl)
	m.nextSBounds = gauge("next_s_bounds", "min and max, over queues, of S(oldest waiting request in queue)", pl, "bound")
	m.nextDiscountedSBounds = gauge("next_discounted_s_bounds", "min and max, over queues, of S(oldest waiting request in queue) - estimated work in progress", pl, "bound")
	m.noAccommodation = counter("request_dispatch_no_accommodation_total", "Number of times a dispatch attempt resulted in a non accommodation due to lack of available seats", pl, fs)
	m.watchCount = histogram("watch_count_samples", "count of watchers for mutating requests in API Priority and Fairness",
		watchCountBuckets, pl, fs)
	m.scraped = newScraped()
	m.seatUtil = newTimingRatioVec(now, "priority_level_seat_utilization",
		"Observations, at the end of every nanosecond, of utilization of seats for any stage of execution (but only initial stage for WATCHes)",
		[]float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1}, prometheus.Labels{"phase": "executing"}, pl)
	m.reqUtil = newTimingRatioVec(now, "priority_level_request_utilization",
		"Observations, at the end of every nanosecond, of number of requests (as a fraction of the relevant limit) waiting or in any stage of execution (but only initial stage for WATCHes)",
		[]float64{0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.25, 0.5, 0.75, 1}, nil, "phase", pl)
	m.demand = newTimingRatioVec(now, "demand_seats",
		"Observations, at the end of every nanosecond, of (the number of seats each priority level could use) / (nominal number of seats for that level)",
		[]float64{0.2, 0.4, 0.6, 0.8, 1, 1.2, 1.4, 1.7, 2, 2.8, 4, 6}, nil, pl)
	m.readWrite = newTimingRatioVec(now, "read_vs_write_current_requests",
		"Observations, at the end of every nanosecond, of the number of requests (as a fraction of the relevant limit) waiting or in regular stage of execution",
		[]float64{0, 0.001, 0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1}, nil, "phase", "request_kind")
	m.levelCaps = map[string][2]int{}
	m.perLevel = []*prometheus.GaugeVec{m.nominal, m.lower, m.upper, m.current, m.target, m.highWatermark, m.average, m.stdDev,
		m.smoothed, m.dispatchR, m.latestS, m.nextSBounds, m.nextDiscountedSBounds}
	for _, c := range []prometheus.Collector{m.rejected, m.dispatched, m.inqueueRequests, m.inqueueSeats, m.executingRequests,
		m.executingSeats, m.waitSeconds, m.executionSeconds, m.queueLength, m.estimatedSeats, m.nominal, m.lower, m.upper,
		m.current, m.target, m.highWatermark, m.average, m.stdDev, m.smoothed, m.fairFrac,
		m.dispatchR, m.latestS, m.nextSBounds, m.nextDiscountedSBounds, m.noAccommodation, m.watchCount, m.scraped, m.seatUtil, m.reqUtil, m.demand, m.readWrite} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Estimated implements apf.Observer.
func (m *Metrics) Estimated(ev apf.RequestEvent, w fairqueue.WorkEstimate) {
	m.estimatedSeats.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Observe(float64(w.MaxSeats()))
}

// Enqueued implements apf.Observer.
func (m *Metrics) Enqueued(ev apf.RequestEvent, queueLength int) {
	m.inqueueRequests.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Inc()
	m.inqueueSeats.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Add(float64(ev.Seats))
	m.queueLength.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Observe(float64(queueLength))
	m.reqUtil.add(1, "waiting", ev.PriorityLevel)
	m.demand.add(float64(ev.Seats), ev.PriorityLevel)
	m.readWrite.add(1, "waiting", requestKind(&ev))
}

// requestKind is upstream's request_kind label: readOnly for get, list
// and watch, mutating for every other verb.
func requestKind(ev *apf.RequestEvent) string {
	if ev.Request != nil {
		switch ev.Request.Info.Verb {
		case "get", "list", "watch":
			return "readOnly"
		}
	}
	return "mutating"
}

func (m *Metrics) dequeued(ev *apf.RequestEvent) {
	if ev.Queued {
		m.inqueueRequests.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Dec()
		m.inqueueSeats.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Sub(float64(ev.Seats))
		m.reqUtil.add(-1, "waiting", ev.PriorityLevel)
		m.demand.add(-float64(ev.Seats), ev.PriorityLevel)
		m.readWrite.add(-1, "waiting", requestKind(ev))
	}
}

// Dispatched implements apf.Observer.
func (m *Metrics) Dispatched(ev apf.RequestEvent) {
	m.dequeued(&ev)
	m.dispatched.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Inc()
	m.executingRequests.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Inc()
	m.executingSeats.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Add(float64(ev.Seats))
	m.reqUtil.add(1, "executing", ev.PriorityLevel)
	m.seatUtil.add(float64(ev.Seats), ev.PriorityLevel)
	m.demand.add(float64(ev.Seats), ev.PriorityLevel)
	m.readWrite.add(1, "executing", requestKind(&ev))
	if !ev.Exempt {
		m.waitSeconds.WithLabelValues(ev.PriorityLevel, ev.FlowSchema, "true").Observe(ev.Wait.Seconds())
	}
}

// Rejected implements apf.Observer.
func (m *Metrics) Rejected(ev apf.RequestEvent, reason fairqueue.Reason) {
	m.dequeued(&ev)
	m.rejected.WithLabelValues(ev.PriorityLevel, ev.FlowSchema, string(reason)).Inc()
	if !ev.Exempt {
		execute := "false"
		if ev.Queued {
			execute = "true" // upstream's label for a request removed from its queue
		}
		m.waitSeconds.WithLabelValues(ev.PriorityLevel, ev.FlowSchema, execute).Observe(ev.Wait.Seconds())
	}
}

// Finished implements apf.Observer.
func (m *Metrics) Finished(ev apf.RequestEvent, execution time.Duration) {
	m.executingRequests.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Dec()
	m.reqUtil.add(-1, "executing", ev.PriorityLevel)
	m.readWrite.add(-1, "executing", requestKind(&ev))
	typ := "regular"
	if ev.Request != nil && ev.Request.Info.Verb == "watch" {
		typ = "watch"
	}
	m.executionSeconds.WithLabelValues(ev.PriorityLevel, ev.FlowSchema, typ).Observe(execution.Seconds())
}

// SeatsReleased implements apf.Observer.
func (m *Metrics) SeatsReleased(ev apf.RequestEvent) {
	m.executingSeats.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Sub(float64(ev.Seats))
	m.seatUtil.add(-float64(ev.Seats), ev.PriorityLevel)
	m.demand.add(-float64(ev.Seats), ev.PriorityLevel)
}

// LevelLimits implements apf.Observer.
func (m *Metrics) LevelLimits(level string, l apf.Limits) {
	m.nominal.WithLabelValues(level).Set(float64(l.Nominal))
	m.lower.WithLabelValues(level).Set(float64(l.Lower))
	m.upper.WithLabelValues(level).Set(float64(l.Upper))
	m.current.WithLabelValues(level).Set(float64(l.Current))
	m.target.WithLabelValues(level).Set(l.Target)
	m.highWatermark.WithLabelValues(level).Set(l.DemandHighWatermark)
	m.average.WithLabelValues(level).Set(l.DemandAverage)
	m.stdDev.WithLabelValues(level).Set(l.DemandStdDev)
	m.smoothed.WithLabelValues(level).Set(l.DemandSmoothed)
	m.fairFrac.Set(l.FairFrac)
	den := float64(l.ConcurrencyDenominator)
	m.seatUtil.setDenominator(den, level)
	m.reqUtil.setDenominator(den, "executing", level)
	m.reqUtil.setDenominator(float64(l.QueueCapacity), "waiting", level)
	m.demand.setDenominator(den, level)
	m.mu.Lock()
	m.levelCaps[level] = [2]int{l.Nominal, l.Queues * l.QueueLengthLimit}
	m.setReadWriteDenominatorsLocked()
	m.mu.Unlock()
}

// setReadWriteDenominatorsLocked sets read_vs_write_current_requests'
// denominators as upstream: the sum over priority levels of their nominal
// seats (executing) and of queues × queue length limit (waiting).
func (m *Metrics) setReadWriteDenominatorsLocked() {
	var executing, waiting int
	for _, c := range m.levelCaps {
		executing += c[0]
		waiting += c[1]
	}
	for _, kind := range []string{"readOnly", "mutating"} {
		m.readWrite.setDenominator(float64(executing), "executing", kind)
		m.readWrite.setDenominator(float64(waiting), "waiting", kind)
	}
}

// LevelRemoved implements apf.Observer: the level's per-level gauges go.
func (m *Metrics) LevelRemoved(level string) {
	for _, g := range m.perLevel {
		g.DeletePartialMatch(prometheus.Labels{pl: level})
	}
	m.seatUtil.deletePartial(0, level)
	m.reqUtil.deletePartial(1, level)
	m.demand.deletePartial(0, level)
	m.mu.Lock()
	delete(m.levelCaps, level)
	m.setReadWriteDenominatorsLocked()
	m.mu.Unlock()
}

// DispatchStats implements apf.DispatchObserver: dispatch_r, latest_s,
// next_s_bounds and next_discounted_s_bounds, set at each dispatch from a
// queue as upstream's SetDispatchMetrics does.
func (m *Metrics) DispatchStats(level string, s fairqueue.DispatchStats) {
	m.dispatchR.WithLabelValues(level).Set(s.R.Float())
	m.latestS.WithLabelValues(level).Set(s.S.Float())
	m.nextSBounds.WithLabelValues(level, "min").Set(s.SMin.Float())
	m.nextSBounds.WithLabelValues(level, "max").Set(s.SMax.Float())
	m.nextDiscountedSBounds.WithLabelValues(level, "min").Set(s.DiscountedSMin.Float())
	m.nextDiscountedSBounds.WithLabelValues(level, "max").Set(s.DiscountedSMax.Float())
}

// NoAccommodation implements apf.DispatchObserver
// (request_dispatch_no_accommodation_total).
func (m *Metrics) NoAccommodation(ev apf.RequestEvent) {
	m.noAccommodation.WithLabelValues(ev.PriorityLevel, ev.FlowSchema).Inc()
}

// WatchCount implements apf.WatchCountObserver (watch_count_samples).
func (m *Metrics) WatchCount(level, flowSchema string, watches int) {
	m.watchCount.WithLabelValues(level, flowSchema).Observe(float64(watches))
}
