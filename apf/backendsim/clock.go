package backendsim

import (
	"container/heap"
	"sync"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// events is the simulation's clock and event queue: the controller's
// timers (AfterFunc) and the model's own events run from it, in time
// order, ties in scheduling order.
type events struct {
	mu  sync.Mutex
	now time.Time
	q   eventHeap
	seq uint64
}

type event struct {
	e   *events
	at  time.Time
	seq uint64
	f   func()
	off bool
}

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

// Now is the simulated time.
func (e *events) Now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

// AfterFunc schedules f after d of simulated time.
func (e *events) AfterFunc(d time.Duration, f func()) fairqueue.Timer {
	return e.at(e.Now().Add(d), f)
}

func (e *events) at(t time.Time, f func()) *event {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	ev := &event{e: e, at: t, seq: e.seq, f: f}
	heap.Push(&e.q, ev)
	return ev
}

// Stop cancels the event if it has not run.
func (ev *event) Stop() bool {
	ev.e.mu.Lock()
	defer ev.e.mu.Unlock()
	was := !ev.off
	ev.off = true
	return was
}

// run runs events until none is due at or before end, then sets the time
// to end.
func (e *events) run(end time.Time) {
	for {
		e.mu.Lock()
		if len(e.q) == 0 || e.q[0].at.After(end) {
			e.now = end
			e.mu.Unlock()
			return
		}
		ev := heap.Pop(&e.q).(*event)
		if ev.at.After(e.now) {
			e.now = ev.at
		}
		due := !ev.off
		ev.off = true
		e.mu.Unlock()
		if due {
			ev.f()
		}
	}
}
