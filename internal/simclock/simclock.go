// Package simclock is the clock and event queue of fairslice's
// deterministic simulations (internal/fleetsim, internal/backendsim):
// simulated time that moves only from one scheduled event to the next, so a
// run depends on its inputs and seed alone, never on the machine's speed.
package simclock

import (
	"container/heap"
	"sync"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// Clock is simulated time and its one event queue. It implements
// fairqueue.Clock, so the controllers under simulation get it as their
// clock (their timers become its events), and the simulation schedules its
// own events on it. Events run one at a time in the goroutine that calls
// Run, in time order, ties in the order they were scheduled. Its methods
// are safe for concurrent use; time moves only inside Run.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	events eventHeap
}

// New returns a clock that reads start until Run moves it.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now implements fairqueue.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc implements fairqueue.Clock: f runs when Run reaches Now()+d
// (a negative d counts as 0).
func (c *Clock) AfterFunc(d time.Duration, f func()) fairqueue.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scheduleLocked(c.now.Add(max(d, 0)), f)
}

// At schedules f at t; a t already past runs at the next step of Run,
// without moving time back.
func (c *Clock) At(t time.Time, f func()) fairqueue.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scheduleLocked(t, f)
}

func (c *Clock) scheduleLocked(t time.Time, f func()) *event {
	c.seq++
	e := &event{c: c, at: t, seq: c.seq, f: f}
	heap.Push(&c.events, e)
	return e
}

// Run runs the events due up to end, each followed by settle (when not
// nil), and leaves the clock at end. Events that the run schedules up to
// end run too.
func (c *Clock) Run(end time.Time, settle func()) {
	for {
		c.mu.Lock()
		if len(c.events) == 0 || c.events[0].at.After(end) {
			c.now = end
			c.mu.Unlock()
			return
		}
		e := heap.Pop(&c.events).(*event)
		if e.off {
			c.mu.Unlock()
			continue
		}
		e.off = true
		if e.at.After(c.now) {
			c.now = e.at
		}
		c.mu.Unlock()
		e.f()
		if settle != nil {
			settle()
		}
	}
}

// event is one scheduled call; it is the fairqueue.Timer that AfterFunc
// and At return.
type event struct {
	c   *Clock
	at  time.Time
	seq uint64
	f   func()
	off bool // ran or stopped; guarded by c.mu
}

// Stop implements fairqueue.Timer: it reports whether it kept the event
// from running.
func (e *event) Stop() bool {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	was := !e.off
	e.off = true
	return was
}

// eventHeap orders events by time, then by scheduling order.
type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
