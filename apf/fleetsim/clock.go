package fleetsim

import (
	"container/heap"
	"sync"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// clock is the simulation's time and its one event queue: the replicas'
// controllers get it as their fairqueue.Clock (their borrowing
// adjustments are its timers) and the simulator schedules its own events
// (arrivals, completions, wait limits) on it. Events run one at a time in
// the caller of run, in time order, ties in the order scheduled.
type clock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	events eventHeap
}

// epoch is the simulation's time 0; any fixed instant would do.
var epoch = time.Unix(1_800_000_000, 0).UTC()

func newClock() *clock { return &clock{now: epoch} }

// Now implements fairqueue.Clock.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc implements fairqueue.Clock: f runs when the simulation
// reaches now+d.
func (c *clock) AfterFunc(d time.Duration, f func()) fairqueue.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	e := &event{c: c, at: c.now.Add(max(d, 0)), seq: c.seq, f: f}
	heap.Push(&c.events, e)
	return e
}

// run runs the events due up to end, each followed by settle, and leaves
// the clock at end.
func (c *clock) run(end time.Time, settle func()) {
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
		c.now = e.at
		c.mu.Unlock()
		e.f()
		settle()
	}
}

// event is one scheduled call; it is the fairqueue.Timer AfterFunc
// returns.
type event struct {
	c   *clock
	at  time.Time
	seq uint64
	f   func()
	off bool // ran or stopped; guarded by c.mu
}

// Stop implements fairqueue.Timer.
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
