package apf

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// HandlerOptions configure the middleware.
type HandlerOptions struct {
	// User reads a request's user and groups. Required; RequestHeaderUser
	// reads the Kubernetes front-proxy headers.
	User UserFunc
	// RequestInfo derives the request attributes; default
	// ParseRequestInfo (Kubernetes-style API paths). A request whose
	// attributes cannot be derived gets 500, as upstream.
	RequestInfo RequestInfoFunc
	// LongRunning says which requests bypass APF; default
	// DefaultLongRunning. Watches never bypass it: they hold seats until
	// initialized (see SignalWatchInitialized).
	LongRunning LongRunningFunc
	// Estimator estimates work; default one with upstream's settings that
	// counts no objects (lists cost the minimum seats) and counts the
	// watches the middleware registers with Watches.
	Estimator *WorkEstimator
	// Watches tracks open watches; default a new WatchTracker.
	Watches *WatchTracker
	// DefaultWaitLimit is the wait limit of requests whose context has no
	// deadline; default DefaultRequestWaitLimit (15 s). Requests with a
	// deadline may wait a quarter of it, at most a minute, as upstream.
	DefaultWaitLimit time.Duration
	// GoAway, beyond upstream, closes the HTTP/2 connections of the
	// flows it targets (see TargetedGoAway); nil closes none.
	GoAway *TargetedGoAway
	// LoadMetricsHeader, beyond upstream, writes the endpoint-load-metrics
	// response header (ORCA's TEXT format, see FormatLoadReport) with the
	// pressure of the request's priority level (Ticket.Pressure), on
	// admitted and rejected requests, so that Envoy's client-side weighted
	// round robin (Envoy Gateway's BackendTrafficPolicy load balancer of
	// type BackendUtilization) sends less to a replica where the level is
	// saturated. Exempt requests get none. False writes nothing.
	LoadMetricsHeader bool
}

// Handler returns middleware that puts APF in front of next, as upstream's
// WithPriorityAndFairness filter does: every request is classified and
// admitted by c (long-running non-watch requests bypass it), executes
// holding its seats, and is answered 429 "Too many requests, please try
// again later." with a Retry-After header if rejected. Responses carry the
// X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID
// headers. A request waits at most its wait limit; a client that goes away
// while waiting (its request context ends) leaves its queue at once. Once
// Shutdown has begun, or after Close, requests get 429 "The apiserver is
// shutting down, please try again later." with Retry-After 5, the PF
// headers and Connection: close, as upstream's API server answers while it
// shuts down. It fails, naming every problem, on a nil next, a nil
// opts.User or a negative opts.DefaultWaitLimit.
func (c *Controller) Handler(next http.Handler, opts HandlerOptions) (http.Handler, error) {
	var errs []error
	if f, isFunc := next.(http.HandlerFunc); next == nil || isFunc && f == nil {
		errs = append(errs, errors.New("apf: Handler's next is nil; it must be the handler that serves the admitted requests"))
	}
	if opts.User == nil {
		errs = append(errs, errors.New("apf: HandlerOptions.User is required"))
	}
	if opts.DefaultWaitLimit < 0 {
		errs = append(errs, fmt.Errorf("apf: HandlerOptions.DefaultWaitLimit=%v must not be negative", opts.DefaultWaitLimit))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	h := &handler{c: c, next: next, opts: opts}
	if h.opts.RequestInfo == nil {
		h.opts.RequestInfo = ParseRequestInfo
	}
	if h.opts.LongRunning == nil {
		h.opts.LongRunning = DefaultLongRunning
	}
	if h.opts.Watches == nil {
		h.opts.Watches = NewWatchTracker()
	}
	if h.opts.Estimator == nil {
		h.opts.Estimator, _ = NewWorkEstimator(WorkEstimatorConfig{}, nil, h.opts.Watches)
	}
	if h.opts.DefaultWaitLimit == 0 {
		h.opts.DefaultWaitLimit = DefaultRequestWaitLimit
	}
	return h, nil
}

type handler struct {
	c    *Controller
	next http.Handler
	opts HandlerOptions
}

type ctxKey struct{}

// admitted is what the middleware puts in an admitted request's context.
type admitted struct {
	t     Ticket
	ctx   context.Context // the request's
	watch bool
	once  sync.Once
}

func (a *admitted) finish() { a.once.Do(a.end) }

// end finishes the ticket; a request whose client has gone is abandoned,
// so that its cut-short execution is no latency sample.
func (a *admitted) end() {
	if a.ctx.Err() != nil {
		a.t.FinishAbandoned()
		return
	}
	a.t.Finish()
}

// TicketFromContext returns the Ticket of the request the middleware
// admitted with ctx, and whether there is one. Handlers may read it
// (Classification, Wait) until they return or, for a watch, until
// SignalWatchInitialized, but must not Finish it: the middleware does.
func TicketFromContext(ctx context.Context) (Ticket, bool) {
	if a, ok := ctx.Value(ctxKey{}).(*admitted); ok {
		return a.t, true
	}
	return Ticket{}, false
}

// SignalWatchInitialized tells the middleware that the watch served with
// ctx (the request's context) has sent its initial events: its seats are
// released, while the watch goes on, as upstream releases a watch's seats
// at its initialization signal. Without it a watch holds its seats until
// its handler returns. It does nothing for other requests, and nothing the
// second time.
func SignalWatchInitialized(ctx context.Context) {
	if a, ok := ctx.Value(ctxKey{}).(*admitted); ok && a.watch {
		a.finish()
	}
}

const (
	tooManyRequests = "Too many requests, please try again later."
	shuttingDown    = "The apiserver is shutting down, please try again later."
)

func setUIDHeaders(w http.ResponseWriter, cl *Classification) {
	w.Header().Set(HeaderPriorityLevelUID, cl.PriorityLevelUID)
	w.Header().Set(HeaderFlowSchemaUID, cl.FlowSchemaUID)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ri, err := h.opts.RequestInfo(r)
	if err != nil {
		http.Error(w, "failed to resolve request attributes: "+err.Error(), http.StatusInternalServerError)
		return
	}
	user, ok := h.opts.User(r)
	if !ok {
		http.Error(w, "no user found for request", http.StatusInternalServerError)
		return
	}
	isWatch := ri.Verb == "watch"
	if !isWatch && h.opts.LongRunning(r, &ri) {
		h.next.ServeHTTP(w, r)
		return
	}
	req := &Request{User: user, Info: ri}
	arrived := h.c.clock.Now()
	wctx, cancel := waitContext(r.Context(), arrived, h.opts.DefaultWaitLimit)
	t, err := h.c.Wait(wctx, req, func(cl *Classification, maxSeats uint64) fairqueue.WorkEstimate {
		we, watches, counted := h.opts.Estimator.EstimateWatchCount(&ri, r.URL.Query(), maxSeats)
		if counted {
			h.c.ObserveWatchCount(cl, watches)
		}
		return we
	})
	cancel()
	if err != nil {
		var rej *RejectedError
		var closed *ClosedError
		switch {
		case errors.As(err, &rej):
			setUIDHeaders(w, &rej.Classification)
			h.setLoadMetrics(w, Ticket{}, &rej.Classification)
			h.goAway(w, r.Proto, arrived, &rej.Classification)
			w.Header().Set("Retry-After", strconv.FormatInt(rej.RetryAfter, 10))
			http.Error(w, tooManyRequests, http.StatusTooManyRequests)
		case errors.As(err, &closed):
			// As upstream's API server answers while it shuts down.
			setUIDHeaders(w, &closed.Classification)
			w.Header().Set("Retry-After", strconv.FormatInt(closed.RetryAfter, 10))
			w.Header().Set("Connection", "close")
			http.Error(w, shuttingDown, http.StatusTooManyRequests)
		default:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
		return
	}
	setUIDHeaders(w, &t.t.cl)
	h.setLoadMetrics(w, t, nil)
	h.goAway(w, r.Proto, arrived, &t.t.cl)
	a := &admitted{t: t, ctx: r.Context(), watch: isWatch}
	defer a.finish()
	if isWatch {
		if forget := h.opts.Watches.Register(&ri, r.URL.Query()); forget != nil {
			defer forget()
		}
	}
	h.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, a)))
}
