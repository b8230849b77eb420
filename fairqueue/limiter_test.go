package fairqueue

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a manual Clock: AfterFunc callbacks run when Advance passes
// their time, in the calling goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			due = append(due, t)
		} else if !t.stopped {
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

type countingObserver struct {
	NopObserver
	mu                   sync.Mutex
	rejected             map[Reason]int
	enqueued, dispatched int
	maxExecSeats         int
}

func (o *countingObserver) Rejected(r Reason) {
	o.mu.Lock()
	o.rejected[r]++
	o.mu.Unlock()
}
func (o *countingObserver) Enqueued(int) { o.mu.Lock(); o.enqueued++; o.mu.Unlock() }
func (o *countingObserver) Dispatched(time.Duration) {
	o.mu.Lock()
	o.dispatched++
	o.mu.Unlock()
}
func (o *countingObserver) SeatsChanged(e, _ int) {
	o.mu.Lock()
	o.maxExecSeats = max(o.maxExecSeats, e)
	o.mu.Unlock()
}

func TestLimiterWaitBlocksUntilDispatch(t *testing.T) {
	clk := &fakeClock{now: t0}
	obs := &countingObserver{rejected: map[Reason]int{}}
	l, err := NewLimiter(Config{Name: "pl", Queues: 2, HandSize: 1, QueueLengthLimit: 1, ConcurrencyLimit: 1}, LimiterOptions{Clock: clk, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	first, err := l.Wait(ctx, 0, WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: ms(5)})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		tk, err := l.Wait(ctx, 0, one())
		if err == nil {
			tk.Finish()
		}
		got <- err
	}()
	// Wait until the second request is queued.
	for l.Counts().Waiting != 1 {
		time.Sleep(time.Millisecond)
	}
	if _, err := l.Wait(ctx, 0, one()); !isReason(err, ReasonQueueFull) {
		t.Fatalf("third Wait = %v, want queue-full", err)
	}
	first.Finish()
	select {
	case err := <-got:
		t.Fatalf("second Wait returned %v while final seats were held", err)
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(ms(5)) // final seats released by the Limiter's timer
	if err := <-got; err != nil {
		t.Fatalf("second Wait = %v", err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.dispatched != 2 || obs.rejected[ReasonQueueFull] != 1 || obs.enqueued != 2 {
		t.Errorf("observer saw %d dispatched, %v rejected, %d enqueued; want 2, 1 queue-full, 2", obs.dispatched, obs.rejected, obs.enqueued)
	}
}

func isReason(err error, r Reason) bool {
	var re *RejectedError
	return errors.As(err, &re) && re.Reason == r
}

func TestLimiterContextEndTimesOut(t *testing.T) {
	l, err := NewLimiter(Config{Queues: 1, HandSize: 1, QueueLengthLimit: 5, ConcurrencyLimit: 1}, LimiterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tk, err := l.Wait(context.Background(), 1, one())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = l.Wait(ctx, 1, one())
	if !isReason(err, ReasonTimeOut) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want time-out wrapping DeadlineExceeded", err)
	}
	tk.Finish()
	if c := l.Counts(); !l.IsIdle() || c.Cancelled != 1 {
		t.Errorf("Counts() = %+v, want idle with 1 cancelled", c)
	}
	l.Close()
	if _, err := l.Wait(context.Background(), 1, one()); !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after Close = %v, want ErrClosed", err)
	}
}

// TestLimiterConcurrentLoad runs many goroutines through a small limiter
// (run with -race): every call ends exactly once, and at most the limit of
// seats is ever executing.
func TestLimiterConcurrentLoad(t *testing.T) {
	const goroutines, calls, limit = 32, 40, 4
	obs := &countingObserver{rejected: map[Reason]int{}}
	l, err := NewLimiter(Config{Name: "load", Queues: 8, HandSize: 2, QueueLengthLimit: 4, ConcurrencyLimit: limit}, LimiterOptions{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var running, maxRunning, ok, rejected atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(3 * time.Second)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := 0; i < calls && time.Now().Before(deadline); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(3000))*time.Microsecond)
				w := one()
				if rng.IntN(4) == 0 {
					w.FinalSeats, w.AdditionalLatency = 1, time.Duration(rng.IntN(500))*time.Microsecond
				}
				err := l.Do(ctx, uint64(rng.IntN(6)), w, func() {
					n := running.Add(1)
					for {
						m := maxRunning.Load()
						if n <= m || maxRunning.CompareAndSwap(m, n) {
							break
						}
					}
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
					running.Add(-1)
				})
				cancel()
				if err == nil {
					ok.Add(1)
				} else {
					var re *RejectedError
					if !errors.As(err, &re) {
						t.Errorf("Do = %v", err)
					}
					rejected.Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	// Let pending final-seat timers fire.
	for i := 0; i < 200 && l.Counts().SeatsInUse > 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	c := l.Counts()
	if c.SeatsInUse != 0 || !l.IsIdle() {
		t.Errorf("after the load: %+v, want idle with no seats", c)
	}
	if int64(c.Dispatched) != ok.Load() || int64(c.Rejected) != rejected.Load() {
		t.Errorf("Counts() = %+v; callers saw %d admitted, %d rejected", c, ok.Load(), rejected.Load())
	}
	if m := maxRunning.Load(); m > limit {
		t.Errorf("%d ran at once, limit %d", m, limit)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if int64(obs.dispatched) != ok.Load() || obs.maxExecSeats > limit {
		t.Errorf("observer: %d dispatched, max %d seats; want %d, ≤ %d", obs.dispatched, obs.maxExecSeats, ok.Load(), limit)
	}
	t.Logf("%d admitted, %d rejected (%v), max %d concurrent", ok.Load(), rejected.Load(), obs.rejected, maxRunning.Load())
}

func TestLimiterCloseStopsFinalSeatTimers(t *testing.T) {
	clk := &fakeClock{now: t0}
	l, err := NewLimiter(Config{Queues: 0, ConcurrencyLimit: 1}, LimiterOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := l.Wait(context.Background(), 0, WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: ms(5)})
	if err != nil {
		t.Fatal(err)
	}
	tk.Finish()
	if _, err := l.Wait(context.Background(), 0, one()); !isReason(err, ReasonConcurrencyLimit) {
		t.Fatalf("Wait while final seats are held = %v, want concurrency-limit", err)
	}
	l.Close()
	clk.Advance(ms(10))
	if got := l.Counts().SeatsInUse; got != 1 {
		t.Errorf("SeatsInUse after Close and the release time = %d, want 1 (timer stopped)", got)
	}
}
