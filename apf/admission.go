package apf

import (
	"context"
	"errors"
	"fmt"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

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
	c.hook.between()
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
	t.hash, t.work, t.arrived = d.FlowHash, we, now
	switch c.hook.arrived(t, now) {
	case admitRefuse:
		c.obs.Rejected(t.event(0), fairqueue.ReasonConcurrencyLimit)
		lv.mu.Unlock()
		return Ticket{}, arrivalDone, c.rejected(t, fairqueue.ReasonConcurrencyLimit, nil)
	case admitHold:
		// It waits with the hook, which wakes it through t.ready.
		t.ready = make(chan struct{})
		lv.mu.Unlock()
		return Ticket{}, arrivalWaiting, nil
	}
	reason := lv.arrive(now, t)
	if reason != "" {
		c.hook.rejected(t, now, reason)
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
	c.hook.waiting(t)
	starved := c.starvation && !lv.exempt && lv.qcfg.ConcurrencyLimit == 0
	lv.mu.Unlock()
	if starved {
		c.starved()
	}
	return Ticket{}, arrivalWaiting, nil
}

// dispatched returns the Ticket of t, dispatched, or its rejection if it
// was rejected after it was left waiting (t.reject).
func (c *Controller) dispatched(t *ticket) (Ticket, error) {
	if t.reject != "" {
		return Ticket{}, c.rejected(t, t.reject, nil)
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
	// A passed deadline is an expiry of the wait limit; anything else
	// (the caller gave up, or Close) a cancellation.
	removed := c.hook.withdraw(t, now) || lv.remove(now, t, errors.Is(err, context.DeadlineExceeded))
	if !removed {
		lv.mu.Unlock()
		return c.dispatched(t)
	}
	c.obs.Rejected(t.event(now.Sub(t.arrived)), fairqueue.ReasonTimeOut)
	c.hook.rejected(t, now, fairqueue.ReasonTimeOut)
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
