package fairqueue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the time source of a Limiter. RealClock is the default; tests
// inject a fake. The Limiter calls Now and AfterFunc with its lock held, so
// they must not call back into it.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d, unless stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started, reporting whether it did.
	Stop() bool
}

// RealClock is the Clock of the time package.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// ErrClosed is returned by Limiter.Wait after Close, and by a Wait that was
// waiting in a queue when Close was called.
var ErrClosed = errors.New("fairqueue: limiter closed")

// ErrWaitLimit is the error a RejectedError with ReasonTimeOut wraps when
// the Limiter's own wait limit (LimiterOptions.WaitLimit) passed.
var ErrWaitLimit = errors.New("fairqueue: wait limit expired")

// RejectedError reports that a request will not execute, and why.
type RejectedError struct {
	Reason Reason
	// Err is, for ReasonTimeOut, the context's error (context.Canceled when
	// the caller gave up, context.DeadlineExceeded when the context's
	// deadline passed) or ErrWaitLimit; nil otherwise.
	Err error
}

// Error returns "fairqueue: request rejected: " and the reason.
func (e *RejectedError) Error() string {
	if e.Err != nil {
		return "fairqueue: request rejected: " + string(e.Reason) + ": " + e.Err.Error()
	}
	return "fairqueue: request rejected: " + string(e.Reason)
}

// Unwrap returns Err: the context's error or ErrWaitLimit for
// ReasonTimeOut, nil otherwise.
func (e *RejectedError) Unwrap() error { return e.Err }

// Wait limits, as upstream's APF filter applies them.
const (
	// DefaultWaitLimit is the wait limit a Limiter gives a request whose
	// context has no deadline, unless LimiterOptions.WaitLimit says
	// otherwise: upstream's default, a quarter of kube-apiserver's default
	// --request-timeout of one minute.
	DefaultWaitLimit = 15 * time.Second
	// NoWaitLimit, as LimiterOptions.WaitLimit, lets a request whose
	// context has no deadline wait until it is dispatched or cancelled.
	// Any negative value means the same.
	NoWaitLimit time.Duration = -1
	// MaxUpstreamWaitLimit caps the wait limit UpstreamWaitLimit returns.
	MaxUpstreamWaitLimit = time.Minute
)

// UpstreamWaitLimit returns the wait limit upstream's APF filter gives a
// request that arrived at arrived with context ctx: a quarter of the time
// from arrived to ctx's deadline if it has one, else defaultLimit; in
// either case at most MaxUpstreamWaitLimit (one minute). The result may be
// zero or negative for a deadline at or before arrived. To apply it, wait
// with a derived context:
//
//	limit := fairqueue.UpstreamWaitLimit(ctx, arrived, fairqueue.DefaultWaitLimit)
//	wctx, cancel := context.WithDeadline(ctx, arrived.Add(limit))
//	defer cancel()
//	t, err := l.WaitFlow(wctx, flow, work)
func UpstreamWaitLimit(ctx context.Context, arrived time.Time, defaultLimit time.Duration) time.Duration {
	limit := defaultLimit
	if deadline, ok := ctx.Deadline(); ok {
		limit = deadline.Sub(arrived) / 4
	}
	return min(limit, MaxUpstreamWaitLimit)
}

// LimiterOptions are the optional parts of a Limiter.
type LimiterOptions struct {
	// Clock defaults to RealClock.
	Clock Clock
	// Observer, if set, is called outside the Limiter's lock, in the order
	// the events happened, one call at a time (see Observer).
	Observer Observer
	// WaitLimit is how long a request whose context has no deadline may
	// wait in a queue before it is removed with ReasonTimeOut (wrapping
	// ErrWaitLimit). Zero means DefaultWaitLimit (15 s, upstream's
	// default); NoWaitLimit (any negative value) means no limit. A request
	// whose context has a deadline waits until that deadline instead (see
	// UpstreamWaitLimit for upstream's rule).
	WaitLimit time.Duration
}

// Limiter is a concurrency-safe fair-queuing admission gate for servers: a
// QueueSet behind a mutex, with blocking in the caller's goroutine.
//
// A caller calls WaitFlow (or DoFlow; Wait and Do for a bare hash) with the
// flow and work estimate of a request; it returns a Ticket once the request
// is dispatched, or an error if the estimate is invalid, the request is
// rejected, its wait limit passes, its context ends while it waits, or the
// Limiter is closed. The caller calls Ticket.Finish when the request's work
// is done.
//
// Final seats (AdditionalLatency > 0) are released by a timer the Limiter
// owns, started by Finish on its Clock for exactly AdditionalLatency, so
// dispatch is not delayed beyond the release time.
//
// Close (or Shutdown) ends every waiting request with ErrClosed, releases
// held final seats at once, and stops every timer; executing requests run
// to their Finish, which then releases all their seats at once.
//
// The Observer and nothing else user-supplied runs outside the lock. All
// methods are safe for concurrent use.
//
// Cost: DoFlow (and Do) reuse their Tickets, so a request that is
// dispatched at or after waiting allocates nothing, with or without an
// Observer; WaitFlow (and Wait) allocate the Ticket they return and its
// channel (two allocations). A request that waits without a context
// deadline also allocates its wait-limit timer. See BENCHMARKS.md for the
// time per request.
type Limiter struct {
	mu        sync.Mutex
	qs        *QueueSet
	clock     Clock
	obs       Observer
	waitLimit time.Duration // ≤ 0: none

	// Waiting tickets, oldest first (for Close).
	waitHead, waitTail *Ticket
	// Final-seat timers of lingering tickets.
	timers map[*Ticket]Timer
	closed bool
	// drained is closed when, after Close, nothing executes any more.
	drained chan struct{}

	// Observer events, recorded under mu and delivered by one goroutine at
	// a time (delivering) outside it; spare is the other buffer.
	evs, spare []event
	delivering bool

	// tickets recycles DoFlow's Tickets.
	tickets sync.Pool
}

// outcome is how a Ticket's wait ended.
type outcome uint8

const (
	outPending    outcome = iota
	outDispatched         // admitted
	outExpired            // the Limiter's wait limit passed
	outCtx                // the context ended while waiting
	outClosed             // Close removed it
)

// Ticket is an admitted request. Call Finish exactly once.
type Ticket struct {
	l *Limiter
	r Request
	// ready receives one token when outcome leaves outPending; it is
	// buffered so that the settling goroutine never blocks, and drained
	// before the Ticket is reused.
	ready   chan struct{}
	outcome outcome
	// gen counts the uses of a pooled Ticket, so that a wait-limit timer
	// of an earlier use does nothing.
	gen atomic.Uint64
	// While waiting: the wait-limit timer, if any, and the links of the
	// Limiter's list of waiting tickets.
	limit      Timer
	prev, next *Ticket
	listed     bool
}

// Queue returns the index of the queue the request went through, or -1.
func (t *Ticket) Queue() int {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	return t.r.Queue()
}

// Flow returns the flow the request was admitted with.
func (t *Ticket) Flow() Flow { return t.r.Flow }

// NewLimiter returns a Limiter for cfg.
func NewLimiter(cfg Config, opts LimiterOptions) (*Limiter, error) {
	clk := opts.Clock
	if clk == nil {
		clk = RealClock{}
	}
	qs, err := NewQueueSet(cfg, clk.Now())
	if err != nil {
		return nil, err
	}
	l := &Limiter{qs: qs, clock: clk, obs: opts.Observer, timers: map[*Ticket]Timer{}}
	switch {
	case opts.WaitLimit == 0:
		l.waitLimit = DefaultWaitLimit
	case opts.WaitLimit > 0:
		l.waitLimit = opts.WaitLimit
	}
	if l.obs != nil {
		qs.SetObserver((*recorder)(l))
	}
	qs.SetDispatchFunc(l.dispatched)
	return l, nil
}

// dispatched is the QueueSet's dispatch function (called under mu).
func (l *Limiter) dispatched(r *Request) {
	t := r.Value.(*Ticket)
	l.settle(t, outDispatched)
}

// settle ends t's wait with o (under mu).
func (l *Limiter) settle(t *Ticket, o outcome) {
	t.outcome = o
	l.unlist(t)
	if t.limit != nil {
		t.limit.Stop()
		t.limit = nil
	}
	t.ready <- struct{}{}
}

func (l *Limiter) list(t *Ticket) {
	t.listed = true
	t.prev, t.next = l.waitTail, nil
	if l.waitTail != nil {
		l.waitTail.next = t
	} else {
		l.waitHead = t
	}
	l.waitTail = t
}

func (l *Limiter) unlist(t *Ticket) {
	if !t.listed {
		return
	}
	t.listed = false
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		l.waitHead = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	} else {
		l.waitTail = t.prev
	}
	t.prev, t.next = nil, nil
}

// unlock releases the lock and delivers the recorded Observer events, unless
// another goroutine is delivering them already: then that one delivers
// these too, after the ones before them, so events reach the Observer in
// the order they happened and one at a time.
func (l *Limiter) unlock() {
	if l.delivering || len(l.evs) == 0 {
		l.mu.Unlock()
		return
	}
	l.delivering = true
	finished := false
	defer func() {
		if !finished { // the Observer panicked: let the next caller deliver
			l.mu.Lock()
			l.delivering = false
			l.mu.Unlock()
		}
	}()
	for len(l.evs) > 0 {
		batch := l.evs
		l.evs = l.spare[:0]
		l.mu.Unlock()
		for i := range batch {
			batch[i].deliver(l.obs)
		}
		clear(batch) // drop references to flow keys
		l.mu.Lock()
		l.spare = batch[:0]
	}
	l.delivering = false
	finished = true
	l.mu.Unlock()
}

// Wait is WaitFlow for a flow known only by its hash.
func (l *Limiter) Wait(ctx context.Context, hash uint64, work WorkEstimate) (*Ticket, error) {
	return l.WaitFlow(ctx, Flow{Hash: hash}, work)
}

// WaitFlow admits a request of the given flow and work, blocking until it
// is dispatched, and returns its Ticket. The flow's names and Key appear in
// Dump and in Observer events. Otherwise it returns, with nothing left to
// do:
//   - an error wrapping ErrInvalidWorkEstimate if work is invalid
//     (WorkEstimate.Validate);
//   - ctx.Err() itself if ctx has already ended: the request does not
//     arrive at all, takes no seat and is not counted;
//   - ErrClosed if the Limiter is closed, or is closed while the request
//     waits;
//   - a *RejectedError with ReasonQueueFull or ReasonConcurrencyLimit if
//     the request is rejected on arrival;
//   - a *RejectedError with ReasonTimeOut if the request is removed from
//     its queue: wrapping ctx.Err() if ctx ends while it waits (a deadline
//     counts in Counts.WaitLimitExpired, a cancellation in
//     CallerCancelled), or ErrWaitLimit if ctx has no deadline and the
//     Limiter's wait limit passes (WaitLimitExpired).
//
// If ctx ends just as the request is dispatched, WaitFlow returns the
// Ticket (the request counts as admitted, as upstream's).
func (l *Limiter) WaitFlow(ctx context.Context, flow Flow, work WorkEstimate) (*Ticket, error) {
	if err := work.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := &Ticket{l: l, ready: make(chan struct{}, 1)}
	if err := l.wait(ctx, t, flow, work); err != nil {
		return nil, err
	}
	return t, nil
}

// wait is WaitFlow with a valid work estimate, for Ticket t, which is new
// or was used and has ended. On return t.ready is empty.
func (l *Limiter) wait(ctx context.Context, t *Ticket, flow Flow, work WorkEstimate) error {
	t.outcome = outPending
	t.r.Flow = flow
	t.r.Value = t
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	reason := l.qs.Arrive(l.clock.Now(), &t.r, flow.Hash, work)
	if reason == "" && t.outcome == outPending {
		l.list(t)
		if _, ok := ctx.Deadline(); !ok && l.waitLimit > 0 {
			gen := t.gen.Load()
			t.limit = l.clock.AfterFunc(l.waitLimit, func() { l.expire(t, gen) })
		}
	}
	l.unlock()
	if reason != "" {
		return &RejectedError{Reason: reason}
	}
	select {
	case <-t.ready:
	case <-ctx.Done():
		l.mu.Lock()
		if t.outcome == outPending {
			now := l.clock.Now()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				l.qs.Expire(now, &t.r)
			} else {
				l.qs.Cancel(now, &t.r)
			}
			l.settle(t, outCtx)
		}
		l.unlock()
		<-t.ready // the token of whichever settle came first
	}
	switch t.outcome {
	case outDispatched:
		return nil
	case outExpired:
		return &RejectedError{Reason: ReasonTimeOut, Err: ErrWaitLimit}
	case outClosed:
		return ErrClosed
	default:
		return &RejectedError{Reason: ReasonTimeOut, Err: ctx.Err()}
	}
}

// expire is the wait-limit timer's function for use gen of t.
func (l *Limiter) expire(t *Ticket, gen uint64) {
	l.mu.Lock()
	if t.gen.Load() == gen && t.outcome == outPending {
		l.qs.Expire(l.clock.Now(), &t.r)
		t.limit = nil
		l.settle(t, outExpired)
	}
	l.unlock()
}

// Do is DoFlow for a flow known only by its hash.
func (l *Limiter) Do(ctx context.Context, hash uint64, work WorkEstimate, fn func()) error {
	return l.DoFlow(ctx, Flow{Hash: hash}, work, fn)
}

// DoFlow runs fn if the request is admitted (see WaitFlow) and finishes it
// after fn returns or panics. Unlike WaitFlow it reuses its Ticket, so a
// request that does not wait allocates nothing.
func (l *Limiter) DoFlow(ctx context.Context, flow Flow, work WorkEstimate, fn func()) error {
	if err := work.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t, _ := l.tickets.Get().(*Ticket)
	if t == nil {
		t = &Ticket{l: l, ready: make(chan struct{}, 1)}
	}
	if err := l.wait(ctx, t, flow, work); err != nil {
		l.recycle(t)
		return err
	}
	defer func() {
		if !t.finish() {
			l.recycle(t)
		}
	}()
	fn()
	return nil
}

// recycle returns t, which has ended and which no final-seat timer refers
// to, to the pool.
func (l *Limiter) recycle(t *Ticket) {
	t.gen.Add(1)
	t.r.Flow, t.r.Value = Flow{}, nil
	l.tickets.Put(t)
}

// Finish records that the request's work is done, releasing its seats (its
// final seats after AdditionalLatency, or at once if the Limiter is
// closed) and dispatching waiting requests. It panics if called twice.
func (t *Ticket) Finish() { t.finish() }

// finish is Finish, reporting whether a final-seat timer now refers to t.
func (t *Ticket) finish() (lingering bool) {
	l := t.l
	l.mu.Lock()
	if t.r.state != StateExecuting {
		l.mu.Unlock()
		panic("fairqueue: Ticket.Finish called twice")
	}
	now := l.clock.Now()
	at, lingering := l.qs.Finish(now, &t.r)
	if lingering {
		if l.closed {
			l.qs.Release(now, &t.r)
			lingering = false
		} else {
			l.timers[t] = l.clock.AfterFunc(at.Sub(now), func() { l.release(t) })
		}
	}
	l.noteDrained()
	l.unlock()
	return lingering
}

func (l *Limiter) release(t *Ticket) {
	l.mu.Lock()
	if _, ok := l.timers[t]; !ok || t.r.state != StateLingering {
		l.mu.Unlock()
		return
	}
	delete(l.timers, t)
	l.qs.Release(l.clock.Now(), &t.r)
	l.unlock()
}

// Reconfigure applies cfg now (see QueueSet.Reconfigure).
func (l *Limiter) Reconfigure(cfg Config) error {
	l.mu.Lock()
	err := l.qs.Reconfigure(l.clock.Now(), cfg)
	l.unlock()
	return err
}

// Dump returns a snapshot of the queue set.
func (l *Limiter) Dump() Dump {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.Dump()
}

// Counts returns the queue set's totals.
func (l *Limiter) Counts() Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.Counts()
}

// IsIdle reports whether nothing is waiting or executing.
func (l *Limiter) IsIdle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.IsIdle()
}

// Demand returns the seat-demand statistics up to now.
func (l *Limiter) Demand() DemandResults {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.Demand(l.clock.Now())
}

// ResetDemand returns Demand and restarts the integration.
func (l *Limiter) ResetDemand() DemandResults {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.qs.ResetDemand(l.clock.Now())
}

// Close shuts the Limiter: every request waiting in a queue is removed at
// once (counted in CallerCancelled) and its Wait returns ErrClosed; held
// final seats are released and their timers stopped; later Wait calls
// return ErrClosed. Executing requests are not interrupted: their Finish
// releases all their seats at once. After Close and the Finish of every
// admitted request the Limiter holds no seat, no timer and no goroutine.
// Close is idempotent.
func (l *Limiter) Close() {
	l.mu.Lock()
	l.closeLocked()
	l.unlock()
}

func (l *Limiter) closeLocked() {
	if l.closed {
		return
	}
	l.closed = true
	now := l.clock.Now()
	for t := l.waitHead; t != nil; t = l.waitHead {
		l.qs.Cancel(now, &t.r)
		l.settle(t, outClosed)
	}
	for t, tm := range l.timers {
		tm.Stop()
		delete(l.timers, t)
		l.qs.Release(now, &t.r)
	}
	l.drained = make(chan struct{})
	l.noteDrained()
}

// noteDrained closes drained once nothing executes after Close (under mu).
func (l *Limiter) noteDrained() {
	if l.drained != nil && l.qs.totExecuting == 0 {
		select {
		case <-l.drained:
		default:
			close(l.drained)
		}
	}
}

// Shutdown is Close followed by waiting until every executing request has
// finished, or until ctx ends, whose error it then returns.
func (l *Limiter) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	l.closeLocked()
	drained := l.drained
	l.unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recorder is the Observer a Limiter installs on its QueueSet: it records
// the events under the lock for delivery after it.
type recorder Limiter

type eventKind uint8

const (
	evRejected eventKind = iota
	evCancelled
	evEnqueued
	evDispatched
	evSeats
)

type event struct {
	kind   eventKind
	flag   bool
	reason Reason
	req    RequestInfo
	a, b   int
	d      time.Duration
}

func (e *event) deliver(o Observer) {
	switch e.kind {
	case evRejected:
		o.Rejected(e.req, e.reason)
	case evCancelled:
		o.Cancelled(e.req, e.flag)
	case evEnqueued:
		o.Enqueued(e.req, e.a)
	case evDispatched:
		o.Dispatched(e.req, e.d)
	case evSeats:
		o.SeatsChanged(e.a, e.b)
	}
}

func (r *recorder) Rejected(req RequestInfo, reason Reason) {
	r.evs = append(r.evs, event{kind: evRejected, req: req, reason: reason})
}

func (r *recorder) Cancelled(req RequestInfo, expired bool) {
	r.evs = append(r.evs, event{kind: evCancelled, req: req, flag: expired})
}

func (r *recorder) Enqueued(req RequestInfo, n int) {
	r.evs = append(r.evs, event{kind: evEnqueued, req: req, a: n})
}

func (r *recorder) Dispatched(req RequestInfo, d time.Duration) {
	r.evs = append(r.evs, event{kind: evDispatched, req: req, d: d})
}

func (r *recorder) SeatsChanged(executing, waiting int) {
	r.evs = append(r.evs, event{kind: evSeats, a: executing, b: waiting})
}
