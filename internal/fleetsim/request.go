package fleetsim

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
)

// request is one simulated request from arrival to its end.
type request struct {
	req     apf.Request // what the replica's controller sees
	client  *client
	conn    int       // the client's connection it was sent on (client.conns)
	arrived time.Time // when it was sent
	goAway  bool      // its response closes that connection
	replica *replica
	work    apf.WorkFunc
	want    int // the seats it asks for
	ctx     *waitCtx
	done    chan waitResult // Wait's answer, from the goroutine calling it

	queued  bool            // Wait is blocked: the request waits in a queue (or held by a cap)
	expired bool            // its wait limit passed, or the run ended: the simulator collects its end
	expiry  fairqueue.Timer // its wait limit, while queued
	ticket  apf.Ticket
	seats   int
	start   time.Time
	counted bool // arrived after the warmup: its outcome is counted
}

// waitResult is what Controller.Wait returned.
type waitResult struct {
	ticket apf.Ticket
	err    error
}

// waitCtx is a request's context: it never ends on its own; the simulator
// ends it (as a deadline) when the request's simulated wait limit passes.
// Its Done also tells the simulator that Wait is about to block: Wait asks
// for Done only after the request's arrival is decided and it is left
// waiting in a queue.
type waitCtx struct {
	done    chan struct{}
	blocked chan struct{}
	once    sync.Once
	expired atomic.Bool
}

func newWaitCtx() *waitCtx {
	return &waitCtx{done: make(chan struct{}), blocked: make(chan struct{})}
}

// Deadline implements context.Context: none that Wait could read.
func (w *waitCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context.
func (w *waitCtx) Done() <-chan struct{} {
	w.once.Do(func() { close(w.blocked) })
	return w.done
}

// Err implements context.Context: DeadlineExceeded once expired.
func (w *waitCtx) Err() error {
	if w.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

// Value implements context.Context.
func (w *waitCtx) Value(any) any { return nil }

// expire ends the context as its deadline would.
func (w *waitCtx) expire() {
	w.expired.Store(true)
	close(w.done)
}

// observer is a replica's apf.Observer: it hands the simulator the
// dispatches of queued requests and the level's limits.
type observer struct {
	apf.NopObserver
	rep *replica
}

// Dispatched implements apf.Observer.
func (o observer) Dispatched(ev apf.RequestEvent) {
	s := o.rep.sim
	rq := s.byReq[ev.Request]
	rq.seats, rq.start = ev.Seats, s.clock.Now()
	if rq.queued {
		s.pending = append(s.pending, rq)
	}
}

// Rejected implements apf.Observer: a request that was left waiting and
// is rejected other than at its wait limit (a cap that held it) is
// collected like a dispatched one.
func (o observer) Rejected(ev apf.RequestEvent, _ fairqueue.Reason) {
	s := o.rep.sim
	if rq := s.byReq[ev.Request]; rq != nil && rq.queued && !rq.expired {
		s.pending = append(s.pending, rq)
	}
}

// LevelLimits implements apf.Observer.
func (o observer) LevelLimits(pl string, l apf.Limits) {
	if pl == o.rep.sim.cfg.Level {
		o.rep.setLimit(o.rep.sim.clock.Now(), l)
		o.rep.limits = l
	}
}
