package fairqueue

import (
	"context"
	"errors"
	"sync"
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

// ErrClosed is returned by Limiter.Wait after Close.
var ErrClosed = errors.New("fairqueue: limiter closed")

// RejectedError reports that a request will not execute, and why.
type RejectedError struct {
	Reason Reason
	// Err is the context's error for ReasonTimeOut, else nil.
	Err error
}

// Error returns "fairqueue: request rejected: " and the reason.
func (e *RejectedError) Error() string {
	if e.Err != nil {
		return "fairqueue: request rejected: " + string(e.Reason) + ": " + e.Err.Error()
	}
	return "fairqueue: request rejected: " + string(e.Reason)
}

// Unwrap returns the context's error, if any.
func (e *RejectedError) Unwrap() error { return e.Err }

// LimiterOptions are the optional parts of a Limiter.
type LimiterOptions struct {
	// Clock defaults to RealClock.
	Clock Clock
	// Observer, if set, is called after the Limiter's lock is released,
	// in the order the events happened, from the goroutine whose call (or
	// final-seat timer) caused them.
	Observer Observer
}

// Limiter is a concurrency-safe fair-queuing admission gate for servers: a
// QueueSet behind a mutex, with blocking in the caller's goroutine.
//
// A caller calls Wait (or Do) with the flow hash and work estimate of a
// request; Wait returns a Ticket once the request is dispatched, or an
// error if it is rejected or its context ends while it waits (the context
// deadline is the wait limit). The caller calls Ticket.Finish when the
// request's work is done.
//
// Final seats (AdditionalLatency > 0) are released by a timer the Limiter
// owns, started by Finish on its Clock for exactly AdditionalLatency, so
// dispatch is not delayed beyond the release time; Close stops pending
// timers (their seats are then never released).
//
// The Observer and nothing else user-supplied runs under the lock; it is
// called after it. All methods are safe for concurrent use.
type Limiter struct {
	mu     sync.Mutex
	qs     *QueueSet
	clock  Clock
	obs    Observer
	rec    recorder
	timers map[*Ticket]Timer
	closed bool
}

// Ticket is an admitted request. Call Finish exactly once.
type Ticket struct {
	l     *Limiter
	r     Request
	ready chan struct{}
}

// Queue returns the index of the queue the request went through, or -1.
func (t *Ticket) Queue() int {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	return t.r.Queue()
}

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
	if l.obs != nil {
		qs.SetObserver(&l.rec)
	}
	qs.SetDispatchFunc(func(r *Request) { close(r.Value.(*Ticket).ready) })
	return l, nil
}

// unlock releases the lock and then reports the buffered events.
func (l *Limiter) unlock() {
	evs := l.rec.take()
	l.mu.Unlock()
	for _, e := range evs {
		e.deliver(l.obs)
	}
}

// Wait admits a request of the given flow and work, blocking until it is
// dispatched. It returns a *RejectedError with ReasonQueueFull or
// ReasonConcurrencyLimit if the request is rejected on arrival, and one with
// ReasonTimeOut (wrapping ctx.Err()) if ctx ends while it waits; in both
// cases nothing is left to do. If ctx ends just as the request is
// dispatched, Wait returns the Ticket (the request counts as admitted, as
// upstream's). It returns ErrClosed after Close.
func (l *Limiter) Wait(ctx context.Context, hash uint64, work WorkEstimate) (*Ticket, error) {
	t := &Ticket{l: l, ready: make(chan struct{})}
	t.r.Value = t
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	reason := l.qs.Arrive(l.clock.Now(), &t.r, hash, work)
	l.unlock()
	if reason != "" {
		return nil, &RejectedError{Reason: reason}
	}
	select {
	case <-t.ready:
		return t, nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	cancelled := l.qs.Cancel(l.clock.Now(), &t.r)
	l.unlock()
	if cancelled {
		return nil, &RejectedError{Reason: ReasonTimeOut, Err: ctx.Err()}
	}
	return t, nil
}

// Do runs fn if the request is admitted (see Wait) and finishes it after
// fn returns or panics.
func (l *Limiter) Do(ctx context.Context, hash uint64, work WorkEstimate, fn func()) error {
	t, err := l.Wait(ctx, hash, work)
	if err != nil {
		return err
	}
	defer t.Finish()
	fn()
	return nil
}

// Finish records that the request's work is done, releasing its seats (its
// final seats after AdditionalLatency) and dispatching waiting requests.
// It panics if called twice.
func (t *Ticket) Finish() {
	l := t.l
	l.mu.Lock()
	if t.r.state != StateExecuting {
		l.mu.Unlock()
		panic("fairqueue: Ticket.Finish called twice")
	}
	now := l.clock.Now()
	at, lingering := l.qs.Finish(now, &t.r)
	if lingering && !l.closed {
		l.timers[t] = l.clock.AfterFunc(at.Sub(now), func() { l.release(t) })
	}
	l.unlock()
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

// Close stops the final-seat timers and makes further Wait calls fail with
// ErrClosed. Requests already admitted can still Finish.
func (l *Limiter) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for t, tm := range l.timers {
		tm.Stop()
		delete(l.timers, t)
	}
}

// recorder is the Observer a Limiter installs on its QueueSet: it buffers
// events under the lock for delivery after it.
type recorder struct{ evs []event }

type eventKind uint8

const (
	evRejected eventKind = iota
	evEnqueued
	evDispatched
	evSeats
)

type event struct {
	kind   eventKind
	reason Reason
	a, b   int
	d      time.Duration
}

func (e event) deliver(o Observer) {
	switch e.kind {
	case evRejected:
		o.Rejected(e.reason)
	case evEnqueued:
		o.Enqueued(e.a)
	case evDispatched:
		o.Dispatched(e.d)
	case evSeats:
		o.SeatsChanged(e.a, e.b)
	}
}

func (r *recorder) take() []event {
	if len(r.evs) == 0 {
		return nil
	}
	out := append([]event(nil), r.evs...)
	r.evs = r.evs[:0]
	return out
}

func (r *recorder) Rejected(reason Reason) {
	r.evs = append(r.evs, event{kind: evRejected, reason: reason})
}
func (r *recorder) Enqueued(n int) { r.evs = append(r.evs, event{kind: evEnqueued, a: n}) }
func (r *recorder) Dispatched(d time.Duration) {
	r.evs = append(r.evs, event{kind: evDispatched, d: d})
}
func (r *recorder) SeatsChanged(executing, waiting int) {
	r.evs = append(r.evs, event{kind: evSeats, a: executing, b: waiting})
}
