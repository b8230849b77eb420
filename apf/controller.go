package apf

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

// ErrClosed is matched (errors.Is) by the *ClosedError that Wait returns
// after Close or once Shutdown has begun, and to requests still waiting
// when Close is called.
var ErrClosed = errors.New("apf: controller closed")

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
	borrow   seats.BorrowingOptions
	retry    *RetryAfter
	hook     admissionHook // the features on the request path (hook.go)
	policy   SeatPolicy    // Options.SeatPolicy; nil: none

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
		policy: opts.SeatPolicy,
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
		c.adapt = newAdaptive(c, opts.Adaptive, opts.ServerConcurrencyLimit)
		c.mu.Lock()
		c.startAdaptiveLocked(c.clock.Now())
		c.mu.Unlock()
	}
	c.hook = newHook(opts.FlowLimiter, c.adapt)
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
