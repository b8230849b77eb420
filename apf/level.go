package apf

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

// level is the state of one priority level: its fair queue set behind a
// lock, its limits and its borrowing statistics. A level outlives
// configurations that keep it; one removed from the configuration keeps
// draining (quiescing) until idle and is then dropped (removed).
type level struct {
	c    *Controller
	name string
	uid  string

	// Guarded by c.mu.
	spec   flowschema.PriorityLevelConfiguration
	static seats.LevelLimits
	demand seats.SeatDemand
	limits Limits

	exempt   bool          // immutable: the exempt level is exempt by name
	maxSeats atomic.Uint64 // the work estimator's per-level limit

	mu        sync.Mutex
	qs        *fairqueue.QueueSet
	qcfg      fairqueue.Config
	quiescing bool
	removed   bool
	timers    map[*ticket]fairqueue.Timer
	win       window    // the adaptive total's samples
	refused   []*ticket // refused by the hook at dispatch, to finish (settle)
	held      int       // requests the hook holds (admitHold), not yet in qs
}

// hooks adapts a level to fairqueue.Observer: only the queue length after
// an enqueue is taken from the QueueSet; everything else is reported by
// the level itself, which knows the request.
type hooks struct {
	fairqueue.NopObserver
	lv *level
}

func (h hooks) Enqueued(req fairqueue.RequestInfo, n int) {
	if t, ok := req.Key.(*ticket); ok {
		t.queued = true
		h.lv.c.obs.Enqueued(t.event(0), n)
	}
}

// dispatchHooks also forwards the dispatch statistics to a
// DispatchObserver (only then does the QueueSet compute them).
type dispatchHooks struct{ hooks }

func (h dispatchHooks) DispatchStats(_ fairqueue.RequestInfo, s fairqueue.DispatchStats) {
	h.lv.c.obs.(DispatchObserver).DispatchStats(h.lv.name, s)
}

func (h dispatchHooks) NoAccommodation(req fairqueue.RequestInfo) {
	if t, ok := req.Key.(*ticket); ok {
		h.lv.c.obs.(DispatchObserver).NoAccommodation(t.event(0))
	}
}

func newLevel(c *Controller, now time.Time, pl *flowschema.PriorityLevelConfiguration, qcfg fairqueue.Config) (*level, error) {
	qs, err := fairqueue.NewQueueSet(qcfg, now)
	if err != nil {
		return nil, err
	}
	lv := &level{
		c: c, name: pl.Name, uid: levelUID(pl), spec: *pl,
		exempt: pl.Spec.Type == flowschema.PriorityLevelTypeExempt,
		qs:     qs, qcfg: qcfg, timers: map[*ticket]fairqueue.Timer{},
	}
	if c.observe {
		if _, ok := c.obs.(DispatchObserver); ok {
			qs.SetObserver(dispatchHooks{hooks{lv: lv}})
		} else {
			qs.SetObserver(hooks{lv: lv})
		}
	}
	qs.SetDispatchFunc(lv.dispatched)
	return lv, nil
}

// dispatched is the QueueSet's dispatch function: it wakes the waiter.
// Called with lv.mu held.
func (lv *level) dispatched(r *fairqueue.Request) {
	t := ticketOf(r)
	if !lv.c.hook.dispatching(t) {
		lv.refused = append(lv.refused, t) // woken by settle
		if lv.c.observe {
			lv.c.obs.Dispatched(t.event(r.StartTime().Sub(t.arrived)))
		}
		return
	}
	if lv.c.observe {
		lv.c.obs.Dispatched(t.event(r.StartTime().Sub(t.arrived)))
	}
	if t.ready != nil {
		close(t.ready)
	}
}

// queueConfig maps a priority level to the fair queue set configuration:
// Queues < 0 for exempt, 0 for Reject, else its queuing parameters.
func queueConfig(pl *flowschema.PriorityLevelConfiguration, limit int, base fairqueue.Config) fairqueue.Config {
	cfg := base
	cfg.Name = pl.Name
	cfg.ConcurrencyLimit = limit
	switch {
	case pl.Spec.Type == flowschema.PriorityLevelTypeExempt:
		cfg.Queues = fairqueue.ExemptQueues
	case pl.Spec.Limited != nil && pl.Spec.Limited.LimitResponse.Queuing != nil:
		q := pl.Spec.Limited.LimitResponse.Queuing
		// Queues <= 0 (possible only with Options.Lenient) is taken as
		// upstream's queue set takes it: 0 is no queuing, a negative
		// number is its code for exemption from the limit. A negative
		// queue length limit rejects as 0 does: upstream compares the
		// queue's length against it.
		cfg.Queues, cfg.HandSize, cfg.QueueLengthLimit = int(q.Queues), int(q.HandSize), max(0, int(q.QueueLengthLimit))
	default:
		cfg.Queues = 0
	}
	return cfg
}

// reconfigure applies a queue configuration; lv.mu must not be held.
func (lv *level) reconfigure(now time.Time, cfg fairqueue.Config) error {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if err := lv.qs.Reconfigure(now, cfg); err != nil {
		return err
	}
	lv.settle(now)
	lv.qcfg = lv.qs.Config()
	return nil
}

// release ends the final phase of t (its timer fired, or at Close).
func (lv *level) release(t *ticket) {
	lv.mu.Lock()
	if _, ok := lv.timers[t]; !ok {
		lv.mu.Unlock()
		return
	}
	delete(lv.timers, t)
	now := lv.c.clock.Now()
	lv.releaseSeats(now, t)
	lv.c.obs.SeatsReleased(t.event(0))
	lv.c.recycle(t)
	reap := lv.quiescing && lv.qs.IsIdle()
	lv.mu.Unlock()
	if reap {
		lv.c.maybeReap(lv)
	}
}

// The queue-set operations that may dispatch requests go through these,
// each settling the requests the hook refused at dispatch, so that none
// stays dispatched past the operation. Called with lv.mu held.

// arrive hands t to the queue set: "" if it was admitted (executing or
// waiting), else the reason it was rejected.
func (lv *level) arrive(now time.Time, t *ticket) fairqueue.Reason {
	reason := lv.qs.Arrive(now, &t.r, t.hash, t.work)
	lv.settle(now)
	return reason
}

// enter hands t, which the hook held, to the queue set at now: it waits
// there, is dispatched (its waiter woken) or is rejected (its waiter
// woken to the rejection).
func (lv *level) enter(now time.Time, t *ticket) {
	lv.held--
	reason := lv.arrive(now, t)
	switch {
	case reason != "":
		lv.c.hook.rejected(t, now, reason)
		lv.wakeRejected(now, t, reason)
	case t.r.State() == fairqueue.StateWaiting:
		lv.c.hook.waiting(t)
	}
}

// rejectHeld rejects t, which the hook held and no longer does, with
// reason at now, and wakes its waiter.
func (lv *level) rejectHeld(now time.Time, t *ticket, reason fairqueue.Reason) {
	lv.held--
	lv.wakeRejected(now, t, reason)
}

// wakeRejected tells the waiter of t that t is rejected; nothing touches
// t after its waiter is woken.
func (lv *level) wakeRejected(now time.Time, t *ticket, reason fairqueue.Reason) {
	lv.c.obs.Rejected(t.event(now.Sub(t.arrived)), reason)
	t.reject = reason
	close(t.ready)
}

// remove takes waiting t out of its queue, as an expiry of its wait limit
// or a cancellation; false if it had been dispatched.
func (lv *level) remove(now time.Time, t *ticket, expire bool) bool {
	remove := lv.qs.Cancel
	if expire {
		remove = lv.qs.Expire
	}
	removed := remove(now, &t.r)
	lv.settle(now)
	return removed
}

// finish ends t's execution; lingering t keeps its final seats until at.
func (lv *level) finish(now time.Time, t *ticket) (at time.Time, lingering bool) {
	at, lingering = lv.qs.Finish(now, &t.r)
	lv.settle(now)
	return at, lingering
}

// releaseSeats gives back the final seats of finished t.
func (lv *level) releaseSeats(now time.Time, t *ticket) {
	lv.qs.Release(now, &t.r)
	lv.settle(now)
}

// settle finishes at once the requests the hook refused at dispatch, and
// wakes their waiters, who reject them. Finishing one may dispatch more;
// they are settled too.
func (lv *level) settle(now time.Time) {
	for len(lv.refused) > 0 {
		t := lv.refused[0]
		lv.refused = lv.refused[1:]
		if _, lingering := lv.qs.Finish(now, &t.r); lingering {
			lv.qs.Release(now, &t.r)
		}
		if lv.c.observe {
			lv.c.obs.Finished(t.event(0), 0)
			lv.c.obs.SeatsReleased(t.event(0))
		}
		t.reject = fairqueue.ReasonConcurrencyLimit
		if t.ready != nil {
			close(t.ready)
		}
	}
	lv.refused = lv.refused[:0]
}
