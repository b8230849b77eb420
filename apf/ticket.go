package apf

import (
	"sync/atomic"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

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

	flow    *flowUse // counted by Options.FlowLimiter; nil: not
	holdSeq uint64   // its arrival among the requests the FlowLimiter held
	// reject is the reason the request is rejected after its waiter was
	// left waiting (refused by the hook at dispatch, or rejected on
	// leaving the hook's hold), set before the waiter is woken; "" if
	// none.
	reject fairqueue.Reason
	// What the queue set needs when a request the hook held enters it.
	hash    uint64
	work    fairqueue.WorkEstimate
	arrived time.Time
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
	return tk.r.StartTime().Sub(tk.arrived)
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
	t.lv, t.ready, t.cl, t.req, t.seats, t.queued, t.flow, t.reject = nil, nil, Classification{}, nil, 0, false, nil, ""
	t.hash, t.work, t.arrived, t.holdSeq = 0, fairqueue.WorkEstimate{}, time.Time{}, 0
	t.r = fairqueue.Request{}
	c.tickets.Put(t)
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
	at, lingering := lv.finish(now, t)
	c.hook.finished(t, now, sample)
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
		lv.releaseSeats(now, t)
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
	c.hook.between()
}
