package apf

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

// BorrowingAdjustmentPeriod is how often upstream re-divides the server's
// concurrency among the priority levels.
const BorrowingAdjustmentPeriod = 10 * time.Second

// ManualAdjustment, as Options.AdjustPeriod, turns the controller's own
// periodic borrowing adjustment off; the caller calls AdjustBorrowing.
const ManualAdjustment time.Duration = -1

// StarvationAdjustInterval is the shortest time between two adjustments
// that Options.AdjustOnStarvation triggers, so that a level that cannot get
// seats (the server is saturated) does not cause one per request.
const StarvationAdjustInterval = time.Second

// ErrClosed is matched (errors.Is) by the *ClosedError that Wait returns
// after Close or once Shutdown has begun, and to requests still waiting
// when Close is called.
var ErrClosed = errors.New("apf: controller closed")

// Options are the optional parts of a Controller.
type Options struct {
	// ServerConcurrencyLimit is the number of seats the server divides
	// among its priority levels (kube-apiserver's --max-requests-inflight
	// plus --max-mutating-requests-inflight, 600 by default). Required.
	ServerConcurrencyLimit int
	// Clock defaults to fairqueue.RealClock.
	Clock fairqueue.Clock
	// Observer receives metrics events; nil ignores them.
	Observer Observer
	// AdjustPeriod is how often the controller runs the borrowing
	// adjustment itself, on a timer of its Clock, until Close. Zero means
	// BorrowingAdjustmentPeriod (10 s), as upstream's controller does: a
	// level whose limit is 0 seats (at a small ServerConcurrencyLimit,
	// global-default starts so) gets seats at the next adjustment after
	// demand appears, so a request waits at most one period. ManualAdjustment
	// (any negative value) opts out: the caller then runs AdjustBorrowing on
	// its own schedule, and a level left at 0 seats serves nothing until it
	// does.
	AdjustPeriod time.Duration
	// AdjustOnStarvation, beyond upstream, runs a borrowing adjustment at
	// once when a request starts waiting at a non-exempt level whose limit
	// is 0 seats, instead of leaving it to wait for the next period (at most
	// one such adjustment per StarvationAdjustInterval). It applies with any
	// AdjustPeriod; StandaloneOptions turns it on.
	AdjustOnStarvation bool
	// Borrowing selects deliberate departures from upstream's borrowing
	// (flowschema.BorrowingOptions); the zero value is upstream's.
	Borrowing flowschema.BorrowingOptions
	// Lenient makes New and Reconfigure take a configuration as upstream's
	// APF controller alone does: objects that flowschema.Validate refuses
	// are used as far as they go (a broken level is ignored and its
	// FlowSchemas skipped), and the mandatory objects the configuration
	// lacks are added only after references are resolved, so a FlowSchema
	// naming a missing exempt level is skipped. For differential testing
	// against that controller; the zero value is strict (see New).
	Lenient bool
	// Adaptive, when not nil, makes the total seats divided among the
	// priority levels follow the execution latency the controller measures
	// (see the package doc, "Adaptive total"), starting from its floor;
	// ServerConcurrencyLimit is then the default ceiling. nil keeps the
	// static total, upstream's behaviour, decision for decision.
	Adaptive *AdaptiveOptions
	// AsStored takes the objects as the API server stores them
	// (flowschema.CompileOptions.AsStored): no v1 defaults are applied, so
	// a Limited level with queues 0 admits up to its limit and rejects the
	// rest, one with an empty limitResponse.type and a queuing section
	// queues without flows, and a FlowSchema with matchingPrecedence 0
	// matches first, as upstream's controller does with objects its
	// informers deliver that skipped the API server's defaulting (fake
	// clientsets). kube/flowcontrol sets it. The zero value defaults every
	// object, as fits configuration files where an omitted field means
	// its default. With AsStored set and Lenient unset, the objects are
	// validated as given (flowschema.ValidateAsStored), so the zeros the
	// defaults would fill are refused.
	AsStored bool
	// QueueSet carries the fairqueue options every priority level's queue
	// set gets (the Fix… switches, ServiceDuration); its Name, Queues,
	// HandSize, QueueLengthLimit and ConcurrencyLimit are ignored.
	QueueSet fairqueue.Config
	// FlowLimiter, beyond upstream, measures each flow's seat-seconds and
	// holds the flows it has caps for to them (package apf/fleet sets
	// them); nil measures nothing and caps nothing. One FlowLimiter per
	// Controller.
	FlowLimiter *FlowLimiter
}

// Request is what the controller classifies: who sent a request and what
// it asks for.
type Request struct {
	User User
	Info RequestInfo
}

func (r *Request) classifierRequest() flowschema.Request {
	return flowschema.Request{
		User: r.User.Name, Groups: r.User.Groups,
		Verb: r.Info.Verb, APIGroup: r.Info.APIGroup, Resource: r.Info.Resource,
		Subresource: r.Info.Subresource, Namespace: r.Info.Namespace, Name: r.Info.Name,
		Path: r.Info.Path, ResourceRequest: r.Info.IsResourceRequest,
	}
}

// Classification is where a request was classified.
type Classification struct {
	FlowSchema, FlowSchemaUID       string
	PriorityLevel, PriorityLevelUID string
	// Distinguisher and FlowHash identify the flow; both are zero where
	// upstream computes no flow (exempt, reject-type and one-queue levels).
	Distinguisher string
	FlowHash      uint64
	Exempt        bool
}

// WorkFunc estimates the work of a classified request, given the most
// seats one request may take in its priority level (0: no level limit).
// WorkEstimator.Estimate is the usual implementation.
type WorkFunc func(cl *Classification, levelMaxSeats uint64) fairqueue.WorkEstimate

// RejectedError reports a request that will not execute.
type RejectedError struct {
	Classification Classification
	// Reason is upstream's: queue-full, concurrency-limit or time-out.
	Reason fairqueue.Reason
	// RetryAfter is the Retry-After, in seconds, to answer with.
	RetryAfter int64
	// Err is the context's error (or ErrClosed) for ReasonTimeOut.
	Err error
}

// Error names the reason and the priority level.
func (e *RejectedError) Error() string {
	s := fmt.Sprintf("apf: request rejected by priority level %q: %s", e.Classification.PriorityLevel, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Err.
func (e *RejectedError) Unwrap() error { return e.Err }

// Controller is API Priority and Fairness for one server: it classifies
// requests by FlowSchema into priority levels and flows, queues them
// fairly in one fair queue set per priority level, admits or rejects them,
// and re-divides the server's concurrency among the levels by borrowing.
//
// Wait admits a request (blocking in the caller's goroutine until it is
// dispatched, rejected or its context ends); Ticket.Finish ends it.
// Reconfigure replaces the configuration at run time without losing
// requests: a priority level that disappears keeps draining with its
// concurrency (quiescing) and is dropped once idle, as upstream. The
// Handler middleware puts it in front of an http.Handler.
//
// Request path cost: classification from an index, one lock per priority
// level (not one for the whole controller), O(hand + log queues) queuing;
// see BENCHMARKS.md. All methods are safe for concurrent use.
type Controller struct {
	clock    fairqueue.Clock
	obs      Observer
	observe  bool // obs is the caller's: build events only then
	serverCL int
	total    int // seats divided among the levels (guarded by mu): serverCL, or the adaptive total
	adapt    *adaptive
	base     fairqueue.Config
	borrow   flowschema.BorrowingOptions
	retry    *RetryAfter
	flows    *FlowLimiter // Options.FlowLimiter; nil: none

	mu       sync.Mutex // configuration, adjustment and reaping
	levels   map[string]*level
	objects  *flowschema.Config
	findings []flowschema.Finding
	lenient  bool
	asStored bool
	snap     atomic.Pointer[snapshot]

	closed    atomic.Bool
	draining  atomic.Bool // Shutdown has begun
	closing   chan struct{}
	tickets   sync.Pool // of *ticket
	closeOnce sync.Once

	period      time.Duration // of the own adjustment; 0: manual
	starvation  bool          // Options.AdjustOnStarvation
	lastStarved time.Time     // guarded by mu
	adjMu       sync.Mutex    // adjTimer and its arming against Close
	adjTimer    fairqueue.Timer
	adjRunning  sync.WaitGroup // periodic adjustments running
}

// Validate reports every invalid option at once (joined with
// errors.Join), each naming its field and value: a ServerConcurrencyLimit
// that is not positive, a negative QueueSet.ServiceDuration, and what
// AdaptiveOptions refuses. New calls it; a wrapper that adds options of
// its own (kube/flowcontrol's) calls it to report its problems and these
// together.
func (o Options) Validate() error {
	var errs []error
	if o.ServerConcurrencyLimit <= 0 {
		errs = append(errs, fmt.Errorf("apf: Options.ServerConcurrencyLimit=%d must be positive", o.ServerConcurrencyLimit))
	}
	if o.QueueSet.ServiceDuration < 0 {
		errs = append(errs, fmt.Errorf("apf: Options.QueueSet.ServiceDuration=%v must not be negative", o.QueueSet.ServiceDuration))
	}
	if a := o.Adaptive; a != nil {
		if err := a.validate(o.ServerConcurrencyLimit); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// snapshot is an immutable view of the configuration for the request path.
type snapshot struct {
	cls        *flowschema.Classifier
	levels     []*level // by flowschema.Decision.LevelIndex
	schemaUIDs []string // by flowschema.Decision.SchemaIndex
}

// New returns a controller for objects (nil: upstream's bootstrap
// configuration, flowschema.DefaultConfig).
//
// The configuration is taken as a cluster's API server would have it: New
// refuses what flowschema.Validate refuses (the API server never stores
// such objects), returning every field error at once (an
// flowschema.ErrorList, reachable with errors.As), and adds the mandatory
// objects the configuration lacks before resolving references, as they
// always exist in a cluster (flowschema.WithMandatory), so a FlowSchema
// naming the exempt level works without the level in the file. What
// upstream accepts but ignores (a dangling FlowSchema, a level no
// FlowSchema reaches, a shadowed FlowSchema) is reported by Findings.
// Options.Lenient takes the configuration as upstream's controller alone
// does instead. New also fails on invalid options.
func New(objects *flowschema.Config, opts Options) (*Controller, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if objects == nil {
		objects = flowschema.DefaultConfig()
	}
	c := &Controller{
		clock: opts.Clock, obs: opts.Observer, serverCL: opts.ServerConcurrencyLimit, total: opts.ServerConcurrencyLimit,
		base: opts.QueueSet, borrow: opts.Borrowing, retry: NewRetryAfter(), lenient: opts.Lenient, asStored: opts.AsStored,
		flows:  opts.FlowLimiter,
		levels: map[string]*level{}, closing: make(chan struct{}),
	}
	if c.clock == nil {
		c.clock = fairqueue.RealClock{}
	}
	if c.obs == nil {
		c.obs = NopObserver{}
	} else {
		c.observe = true
	}
	if err := c.Reconfigure(objects); err != nil {
		return nil, err
	}
	if opts.Adaptive != nil {
		c.adapt = newAdaptive(opts.Adaptive, opts.ServerConcurrencyLimit)
		c.mu.Lock()
		c.startAdaptiveLocked(c.clock.Now())
		c.mu.Unlock()
	}
	switch {
	case opts.AdjustPeriod == 0:
		c.period = BorrowingAdjustmentPeriod
	case opts.AdjustPeriod > 0:
		c.period = opts.AdjustPeriod
	}
	c.starvation = opts.AdjustOnStarvation
	if c.period > 0 {
		c.scheduleAdjust()
	}
	return c, nil
}

// scheduleAdjust arms the timer of the next periodic adjustment.
func (c *Controller) scheduleAdjust() {
	c.adjMu.Lock()
	defer c.adjMu.Unlock()
	if c.closed.Load() {
		return
	}
	c.adjTimer = c.clock.AfterFunc(c.period, c.periodicAdjust)
}

// periodicAdjust is the timer's function: one adjustment, then the next
// timer. Close waits for one that has started.
func (c *Controller) periodicAdjust() {
	c.adjMu.Lock()
	if c.closed.Load() {
		c.adjMu.Unlock()
		return
	}
	c.adjRunning.Add(1)
	c.adjMu.Unlock()
	defer c.adjRunning.Done()
	c.AdjustBorrowing(c.clock.Now())
	c.scheduleAdjust()
}

// starved runs the adjustment of Options.AdjustOnStarvation for a request
// that has started waiting at a level with no seats.
func (c *Controller) starved() {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() || (!c.lastStarved.IsZero() && now.Sub(c.lastStarved) < StarvationAdjustInterval) {
		return
	}
	c.lastStarved = now
	c.adjustLocked(now)
}

// Reconfigure replaces the FlowSchemas and priority levels (nil: the
// bootstrap configuration), checked and completed as New does. Priority
// levels that stay keep their queues and requests; new ones start empty;
// removed ones quiesce. It recomputes every level's limits and runs a
// borrowing adjustment, as upstream does on every configuration change. On
// error (a configuration New would refuse) nothing changes: the previous
// configuration stays in force.
func (c *Controller) Reconfigure(objects *flowschema.Config) error {
	_, err := c.Apply(objects)
	return err
}

// Apply is Reconfigure returning the findings of the new configuration
// (see Findings) for the caller to log.
func (c *Controller) Apply(objects *flowschema.Config) ([]flowschema.Finding, error) {
	if objects == nil {
		objects = flowschema.DefaultConfig()
	}
	if !c.lenient {
		validate := flowschema.Validate
		if c.asStored {
			validate = flowschema.ValidateAsStored
		}
		if err := validate(objects); err != nil {
			return nil, fmt.Errorf("apf: configuration refused: %w", err)
		}
		objects = flowschema.WithMandatory(objects)
	}
	cls, err := flowschema.CompileWith(objects, flowschema.CompileOptions{AsStored: c.asStored})
	if err != nil {
		return nil, err
	}
	findings := cls.Lint()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.digestLocked(c.clock.Now(), cls, objects.DeepCopy()); err != nil {
		return nil, err
	}
	c.findings = findings
	return slices.Clone(findings), nil
}

// Findings returns what flowschema's Lint finds in the configuration in
// force: FlowSchemas upstream skips (dangling) or can never select
// (shadowed, never-matches), and priority levels it ignores or no
// FlowSchema reaches. None stops the configuration from being used, as
// none stops upstream; they are mistakes worth logging.
func (c *Controller) Findings() []flowschema.Finding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.findings)
}

func (c *Controller) digestLocked(now time.Time, cls *flowschema.Classifier, objects *flowschema.Config) error {
	pls := cls.PriorityLevels()
	// The only errors ComputeLimits has left after Compile come from the
	// shares; check them before changing anything.
	if _, err := flowschema.ComputeLimits(c.total, pls); err != nil {
		return fmt.Errorf("apf: %w", err)
	}
	next := make(map[string]*level, len(pls))
	snap := &snapshot{cls: cls, levels: make([]*level, len(pls))}
	var created []*level
	for i := range pls {
		pl := &pls[i]
		lv := c.levels[pl.Name]
		if lv == nil {
			var err error
			lv, err = newLevel(c, now, pl, queueConfig(pl, 0, c.base))
			if err != nil {
				// Compile keeps only levels whose queuing config deals.
				panic(fmt.Sprintf("apf: priority level %q: %v", pl.Name, err))
			}
			created = append(created, lv)
		} else {
			lv.spec = *pl
			lv.mu.Lock()
			lv.quiescing = false
			lv.mu.Unlock()
		}
		next[pl.Name] = lv
		snap.levels[i] = lv
	}
	for name, lv := range c.levels {
		if next[name] != nil {
			continue
		}
		lv.mu.Lock()
		if lv.qs.IsIdle() {
			lv.removed = true
			lv.mu.Unlock()
			c.retry.Forget(name)
			c.obs.LevelRemoved(name)
			continue
		}
		lv.quiescing = true
		lv.mu.Unlock()
		next[name] = lv
	}
	fss := cls.FlowSchemas()
	snap.schemaUIDs = make([]string, len(fss))
	for i := range fss {
		snap.schemaUIDs[i] = schemaUID(&fss[i])
	}
	c.levels = next
	c.setStaticLocked(created)
	c.objects = objects
	c.adjustLocked(now)
	c.snap.Store(snap)
	return nil
}

// sortedLevels returns the live levels in name order.
func (c *Controller) sortedLevels() []*level {
	out := make([]*level, 0, len(c.levels))
	for _, lv := range c.levels {
		out = append(out, lv)
	}
	slices.SortFunc(out, func(a, b *level) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return out
}

// AdjustBorrowing runs the periodic borrowing adjustment at now: every
// level's seat demand over the period is summarized and smoothed, and the
// server's concurrency is re-divided as upstream does every 10 seconds.
// The controller calls it itself every Options.AdjustPeriod unless that is
// ManualAdjustment; it may also be called at any other time.
func (c *Controller) AdjustBorrowing(now time.Time) {
	if c.closed.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adjustLocked(now)
}

// AdjustBorrowingHolding, beyond upstream, is AdjustBorrowing in one step
// with SetCurrentLimits(now, hold): the demand statistics are folded and
// the borrowing computed as AdjustBorrowing does, but the levels named in
// hold get the held current limits (within their Lower and Upper bounds)
// instead of the borrowing's, so no queued request is dispatched at the
// borrowing's limit in between. It returns the borrowing's current limits
// by level name, what AdjustBorrowing would have applied. With hold nil
// it is exactly AdjustBorrowing (and returns nil). Package apf/fleet's
// Coordinator calls it with the fleet's last decision, which the next
// exchange then replaces.
func (c *Controller) AdjustBorrowingHolding(now time.Time, hold map[string]int) map[string]int {
	if c.closed.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adjustHoldingLocked(now, hold)
}

// Classify returns the classification of req without admitting it.
func (c *Controller) Classify(req *Request) Classification {
	fr := req.classifierRequest()
	s := c.snap.Load()
	return s.classification(s.cls.Classify(&fr))
}

func (s *snapshot) classification(d flowschema.Decision) Classification {
	lv := s.levels[d.LevelIndex]
	return Classification{
		FlowSchema: d.FlowSchema, FlowSchemaUID: s.schemaUIDs[d.SchemaIndex],
		PriorityLevel: d.PriorityLevel, PriorityLevelUID: lv.uid,
		Distinguisher: d.Distinguisher, FlowHash: d.FlowHash, Exempt: d.Exempt,
	}
}

// Ticket is an admitted request. Call Finish exactly once when its work is
// done. A Ticket is a small value (a handle): copies refer to the same
// request. The controller reuses its state after Finish, so every method
// of a Ticket that has been finished panics (a generation check), Finish
// included: using a Ticket after Finish is a programmer error, and this
// keeps it from touching the request that reuses the state. The zero
// Ticket is not valid.
type Ticket struct {
	t   *ticket
	gen uint64
}

// ticket is the state of one request, pooled per controller.
type ticket struct {
	lv    *level
	r     fairqueue.Request
	ready chan struct{} // closed at dispatch; nil if dispatched at arrival
	cl    Classification
	req   *Request
	seats int
	// gen counts the ticket's uses: a Ticket handle is valid while its
	// gen matches; Finish advances it (under lv.mu).
	gen atomic.Uint64

	queued bool // entered a queue (set under lv.mu)

	flow   *flowUse // counted by Options.FlowLimiter; nil: not
	capped bool     // dispatched over its flow's cap: to be rejected
}

// live returns the state of t, panicking if t has been finished.
func (t Ticket) live(method string) *ticket {
	if t.t == nil || t.t.gen.Load() != t.gen {
		panic("apf: Ticket." + method + " called on a finished or zero Ticket")
	}
	return t.t
}

// Classification returns where the request was classified.
func (t Ticket) Classification() Classification { return t.live("Classification").cl }

// Queue returns the index of the queue the request went through, or -1.
func (t Ticket) Queue() int {
	tk := t.live("Queue")
	tk.lv.mu.Lock()
	defer tk.lv.mu.Unlock()
	return tk.r.Queue()
}

// WaitTime returns how long the request waited for dispatch (Controller.Wait
// is the call that waits).
func (t Ticket) WaitTime() time.Duration {
	tk := t.live("WaitTime")
	return tk.r.StartTime().Sub(tk.r.ArrivalTime())
}

// Work returns the request's work estimate as the queue set used it.
func (t Ticket) Work() fairqueue.WorkEstimate {
	tk := t.live("Work")
	tk.lv.mu.Lock()
	defer tk.lv.mu.Unlock()
	return tk.r.Work()
}

func (t *ticket) event(wait time.Duration) RequestEvent {
	return RequestEvent{
		Request: t.req, PriorityLevel: t.cl.PriorityLevel, FlowSchema: t.cl.FlowSchema,
		Seats: t.seats, Exempt: t.cl.Exempt, Queued: t.queued, Wait: wait,
	}
}

// newTicket takes a ticket from the pool.
func (c *Controller) newTicket() *ticket {
	if t, ok := c.tickets.Get().(*ticket); ok {
		return t
	}
	return new(ticket)
}

// recycle returns t to the pool once nothing refers to it: rejected, or
// finished with its seats released.
func (c *Controller) recycle(t *ticket) {
	t.lv, t.ready, t.cl, t.req, t.seats, t.queued, t.flow, t.capped = nil, nil, Classification{}, nil, 0, false, nil, false
	t.r = fairqueue.Request{}
	c.tickets.Put(t)
}

// Wait classifies req, estimates its work with work (nil: one seat) and
// waits until it is dispatched. It returns a Ticket, or a *RejectedError
// if the request is rejected on arrival (queue-full, concurrency-limit) or
// its context ends while it waits (time-out; ctx's deadline is the wait
// limit: the middleware applies upstream's, see
// fairqueue.UpstreamWaitLimit), or a *ClosedError (matching ErrClosed)
// after Close or once Shutdown has begun. A request whose context
// has already ended is rejected with time-out without entering a queue.
// If ctx ends just as the request is dispatched, the Ticket is returned.
func (c *Controller) Wait(ctx context.Context, req *Request, work WorkFunc) (Ticket, error) {
	fr := req.classifierRequest()
	if c.closed.Load() || c.draining.Load() {
		s := c.snap.Load()
		return Ticket{}, c.closedError(s.classification(s.cls.Classify(&fr)))
	}
	if c.adapt != nil {
		c.maybeRevise(c.clock.Now())
	}
	t := c.newTicket()
	for {
		tk, next, err := c.arrive(ctx, t, &fr, req, work)
		switch next {
		case arrivalDone:
			return tk, err
		case arrivalWaiting:
			return c.awaitDispatch(ctx, t)
		}
		// arrivalReclassify: the level was reaped after t was classified.
	}
}

// arrival is what Wait does after arrive.
type arrival int

const (
	arrivalDone       arrival = iota // admitted or rejected: Wait returns
	arrivalWaiting                   // queued: Wait awaits the dispatch
	arrivalReclassify                // the level was reaped: classify again
)

// arrive classifies t's request, estimates its work and hands it to its
// priority level's queue set (after the flow limiter), in one step under
// the level's lock. Unless it returns arrivalDone, t holds no result yet.
func (c *Controller) arrive(ctx context.Context, t *ticket, fr *flowschema.Request, req *Request, work WorkFunc) (Ticket, arrival, error) {
	s := c.snap.Load()
	d := s.cls.Classify(fr)
	lv := s.levels[d.LevelIndex]
	t.lv, t.cl, t.req = lv, s.classification(d), req
	we := fairqueue.WorkEstimate{InitialSeats: 1}
	if work != nil {
		we = work(&t.cl, lv.maxSeats.Load())
	}
	if err := we.Validate(); err != nil {
		c.recycle(t)
		return Ticket{}, arrivalDone, fmt.Errorf("apf: work estimate of a request to priority level %q: %w", lv.name, err)
	}
	t.seats = we.MaxSeats()
	setFlow(&t.r, d.FlowSchema, d.Distinguisher, t)
	if c.observe {
		c.obs.Estimated(t.event(0), we)
	}
	if err := ctx.Err(); err != nil {
		lv.mu.Lock()
		c.obs.Rejected(t.event(0), fairqueue.ReasonTimeOut)
		lv.mu.Unlock()
		return Ticket{}, arrivalDone, c.rejected(t, fairqueue.ReasonTimeOut, err)
	}
	lv.mu.Lock()
	if lv.removed {
		lv.mu.Unlock()
		return Ticket{}, arrivalReclassify, nil
	}
	now := c.clock.Now()
	if !c.flowAdmit(t, now) {
		c.obs.Rejected(t.event(0), fairqueue.ReasonConcurrencyLimit)
		lv.mu.Unlock()
		return Ticket{}, arrivalDone, c.rejected(t, fairqueue.ReasonConcurrencyLimit, nil)
	}
	reason := lv.qs.Arrive(now, &t.r, d.FlowHash, we)
	lv.finishCapped(now)
	if reason != "" {
		if c.adapt != nil {
			lv.win.pressed = true
		}
		c.flowRefused(t, now)
		c.obs.Rejected(t.event(0), reason)
		lv.mu.Unlock()
		return Ticket{}, arrivalDone, c.rejected(t, reason, nil)
	}
	if t.r.State() != fairqueue.StateWaiting {
		lv.mu.Unlock()
		tk, err := c.dispatched(t) // at once
		return tk, arrivalDone, err
	}
	// Only a waiting request needs a channel to be woken by; its dispatch
	// needs lv.mu, so it cannot happen before this.
	t.ready = make(chan struct{})
	if c.adapt != nil {
		lv.win.pressed = true
	}
	starved := c.starvation && !lv.exempt && lv.qcfg.ConcurrencyLimit == 0
	lv.mu.Unlock()
	if starved {
		c.starved()
	}
	return Ticket{}, arrivalWaiting, nil
}

// dispatched returns the Ticket of t, dispatched, or the concurrency-limit
// rejection if the flow limiter capped it.
func (c *Controller) dispatched(t *ticket) (Ticket, error) {
	if t.capped {
		return Ticket{}, c.rejected(t, fairqueue.ReasonConcurrencyLimit, nil)
	}
	return Ticket{t, t.gen.Load()}, nil
}

// awaitDispatch blocks until waiting t is dispatched, ctx ends or c
// closes, and then gives up on t unless it was dispatched.
func (c *Controller) awaitDispatch(ctx context.Context, t *ticket) (Ticket, error) {
	var err error
	select {
	case <-t.ready:
		return c.dispatched(t)
	case <-ctx.Done():
		err = ctx.Err()
	case <-c.closing:
		err = ErrClosed
	}
	return c.giveUp(t, err)
}

// giveUp removes waiting t from its queue set because of err (its
// context's error, or ErrClosed): an expiry for a passed deadline, a
// cancellation otherwise. A t dispatched meanwhile is admitted, as
// upstream.
func (c *Controller) giveUp(t *ticket, err error) (Ticket, error) {
	lv := t.lv
	lv.mu.Lock()
	now := c.clock.Now()
	remove := lv.qs.Cancel // the caller gave up (or Close)
	if errors.Is(err, context.DeadlineExceeded) {
		remove = lv.qs.Expire // its wait limit passed
	}
	removed := remove(now, &t.r)
	lv.finishCapped(now)
	if !removed {
		lv.mu.Unlock()
		return c.dispatched(t)
	}
	c.obs.Rejected(t.event(now.Sub(t.r.ArrivalTime())), fairqueue.ReasonTimeOut)
	c.flowRefused(t, now)
	reap := lv.quiescing && lv.qs.IsIdle()
	lv.mu.Unlock()
	if reap {
		c.maybeReap(lv)
	}
	if err == ErrClosed {
		e := c.closedError(t.cl)
		c.recycle(t)
		return Ticket{}, e
	}
	return Ticket{}, c.rejected(t, fairqueue.ReasonTimeOut, err)
}

// rejected builds the error for a rejected request and recycles its
// ticket.
func (c *Controller) rejected(t *ticket, reason fairqueue.Reason, err error) *RejectedError {
	e := &RejectedError{
		Classification: t.cl, Reason: reason, Err: err,
		RetryAfter: c.retry.Record(c.clock.Now(), t.cl.PriorityLevel),
	}
	c.recycle(t)
	return e
}

// Finish ends the request: its seats are released (its final seats after
// its work estimate's AdditionalLatency, on a timer) and waiting requests
// are dispatched. It panics if called twice (or on the zero Ticket).
func (h Ticket) Finish() { h.finish(true) }

// FinishAbandoned is Finish for a request whose caller gave up before it
// completed (a client that timed out or went away): with Options.Adaptive
// its execution time is not a latency sample, since it measures the
// caller's patience, not the server. Without Options.Adaptive it is Finish.
func (h Ticket) FinishAbandoned() { h.finish(false) }

func (h Ticket) finish(sample bool) {
	if h.t == nil {
		panic("apf: Ticket.Finish called on the zero Ticket")
	}
	t := h.t
	if t.gen.Load() != h.gen {
		panic("apf: Ticket.Finish called twice")
	}
	lv := t.lv
	c := lv.c
	lv.mu.Lock()
	if !t.gen.CompareAndSwap(h.gen, h.gen+1) {
		lv.mu.Unlock()
		panic("apf: Ticket.Finish called twice")
	}
	now := c.clock.Now()
	at, lingering := lv.qs.Finish(now, &t.r)
	if c.adapt != nil && sample {
		c.adapt.sampled(lv, t.r.StartTime(), now.Sub(t.r.StartTime()))
	}
	lv.finishCapped(now)
	if t.flow != nil {
		c.flows.finished(t, now)
	}
	if c.observe {
		c.obs.Finished(t.event(0), now.Sub(t.r.StartTime()))
	}
	done := false
	switch {
	case !lingering:
		if c.observe {
			c.obs.SeatsReleased(t.event(0))
		}
		done = true
	case c.closed.Load():
		lv.qs.Release(now, &t.r)
		lv.finishCapped(now)
		c.obs.SeatsReleased(t.event(0))
		done = true
	default:
		lv.timers[t] = c.clock.AfterFunc(at.Sub(now), func() { lv.release(t) })
	}
	reap := lv.quiescing && lv.qs.IsIdle()
	if done {
		c.recycle(t)
	}
	lv.mu.Unlock()
	if reap {
		c.maybeReap(lv)
	}
	if c.adapt != nil {
		c.maybeRevise(now)
	}
}

// maybeReap drops a quiescing level that has become idle, and re-divides
// the concurrency among the rest (upstream re-digests its configuration).
func (c *Controller) maybeReap(lv *level) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lv.mu.Lock()
	if !lv.quiescing || lv.removed || !lv.qs.IsIdle() || c.levels[lv.name] != lv {
		lv.mu.Unlock()
		return
	}
	lv.removed = true
	lv.mu.Unlock()
	delete(c.levels, lv.name)
	c.retry.Forget(lv.name)
	c.obs.LevelRemoved(lv.name)
	c.setStaticLocked(nil)
	c.adjustLocked(c.clock.Now())
}

// Close stops the periodic adjustment, ends every waiting request with
// ErrClosed, releases final seats at once and makes Wait fail with
// ErrClosed. Executing requests can still Finish. Close is idempotent.
func (c *Controller) Close() {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.closing)
		c.adjMu.Lock()
		if c.adjTimer != nil {
			c.adjTimer.Stop()
		}
		c.adjMu.Unlock()
		c.adjRunning.Wait() // one that is running ends without re-arming
		c.mu.Lock()
		levels := c.sortedLevels()
		c.mu.Unlock()
		for _, lv := range levels {
			lv.mu.Lock()
			var pending []*ticket
			for t, tm := range lv.timers {
				if tm.Stop() {
					pending = append(pending, t)
				}
			}
			lv.mu.Unlock()
			for _, t := range pending {
				lv.release(t)
			}
		}
	})
}
