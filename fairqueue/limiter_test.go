package fairqueue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/fairslice/fairslice/shufflesharding"
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

func (o *countingObserver) Rejected(_ RequestInfo, r Reason) {
	o.mu.Lock()
	o.rejected[r]++
	o.mu.Unlock()
}
func (o *countingObserver) Cancelled(RequestInfo, bool) {
	o.mu.Lock()
	o.rejected[ReasonTimeOut]++
	o.mu.Unlock()
}
func (o *countingObserver) Enqueued(RequestInfo, int) { o.mu.Lock(); o.enqueued++; o.mu.Unlock() }
func (o *countingObserver) Dispatched(RequestInfo, time.Duration) {
	o.mu.Lock()
	o.dispatched++
	o.mu.Unlock()
}
func (o *countingObserver) SeatsChanged(e, _ int) {
	o.mu.Lock()
	o.maxExecSeats = max(o.maxExecSeats, e)
	o.mu.Unlock()
}

// testTimeout bounds every blocking step of the Limiter tests, so that a
// regression fails fast instead of hanging until the test binary's timeout.
const testTimeout = 10 * time.Second

// boundedCtx returns a context that ends after testTimeout.
func boundedCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds, failing the test after testTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// recv receives from ch, failing the test after testTimeout.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// waitGroup waits for wg, failing the test after testTimeout.
func waitGroup(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	recv(t, "the goroutines to end", done)
}

// goWait starts Wait in a goroutine; the returned channel yields its error
// (the ticket, if any, is finished at once).
func goWait(ctx context.Context, l *Limiter, hash uint64) <-chan error {
	ch := make(chan error, 1)
	go func() {
		tk, err := l.Wait(ctx, hash, one())
		if err == nil {
			tk.Finish()
		}
		ch <- err
	}()
	return ch
}

func newTestLimiter(t *testing.T, cfg Config, opts LimiterOptions) *Limiter {
	t.Helper()
	l, err := NewLimiter(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func TestLimiterWaitBlocksUntilDispatch(t *testing.T) {
	clk := &fakeClock{now: t0}
	obs := &countingObserver{rejected: map[Reason]int{}}
	l := newTestLimiter(t, Config{Name: "pl", Queues: 2, HandSize: 1, QueueLengthLimit: 1, ConcurrencyLimit: 1}, LimiterOptions{Clock: clk, Observer: obs})
	ctx := boundedCtx(t)
	first, err := l.Wait(ctx, 0, WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: ms(5)})
	if err != nil {
		t.Fatal(err)
	}
	got := goWait(ctx, l, 0)
	waitFor(t, "the second request to queue", func() bool { return l.Counts().Waiting == 1 })
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
	if err := recv(t, "the second Wait", got); err != nil {
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
	l := newTestLimiter(t, Config{Queues: 1, HandSize: 1, QueueLengthLimit: 5, ConcurrencyLimit: 1}, LimiterOptions{})
	tk, err := l.Wait(boundedCtx(t), 1, one())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = l.Wait(ctx, 1, one())
	if !isReason(err, ReasonTimeOut) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want time-out wrapping DeadlineExceeded", err)
	}
	// A caller that gives up counts apart from an expired wait limit.
	ctx2, cancel2 := context.WithCancel(context.Background())
	got := goWait(ctx2, l, 1)
	waitFor(t, "the request to queue", func() bool { return l.Counts().Waiting == 1 })
	cancel2()
	if err := recv(t, "the cancelled Wait", got); !isReason(err, ReasonTimeOut) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want time-out wrapping Canceled", err)
	}
	tk.Finish()
	want := Counts{Dispatched: 1, Rejected: 2, Cancelled: 2, WaitLimitExpired: 1, CallerCancelled: 1, Queues: 1}
	if diff := cmp.Diff(want, l.Counts()); !l.IsIdle() || diff != "" {
		t.Errorf("Counts() (-want +got):\n%s", diff)
	}
	l.Close()
	if _, err := l.Wait(boundedCtx(t), 1, one()); !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after Close = %v, want ErrClosed", err)
	}
}

// TestLimiterConcurrentLoad runs many goroutines through a small limiter
// (run with -race): every call ends exactly once, and at most the limit of
// seats is ever executing.
func TestLimiterConcurrentLoad(t *testing.T) {
	const goroutines, calls, limit = 32, 40, 4
	obs := &countingObserver{rejected: map[Reason]int{}}
	l := newTestLimiter(t, Config{Name: "load", Queues: 8, HandSize: 2, QueueLengthLimit: 4, ConcurrencyLimit: limit}, LimiterOptions{Observer: obs})
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
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, context.DeadlineExceeded) && !isReason(err, ReasonTimeOut):
					// The context ended before Wait: not an arrival.
				default:
					var re *RejectedError
					if !errors.As(err, &re) {
						t.Errorf("Do = %v", err)
					}
					rejected.Add(1)
				}
			}
		}(g)
	}
	waitGroup(t, &wg)
	// Let pending final-seat timers fire.
	waitFor(t, "final seats to be released", func() bool { return l.Counts().SeatsInUse == 0 })
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

// TestLimiterRejectsInvalidWork: every invalid estimate is an error naming
// the field and value, and nothing is admitted or counted.
func TestLimiterRejectsInvalidWork(t *testing.T) {
	n := -1
	for _, tc := range []struct {
		name string
		work WorkEstimate
		want []string
	}{
		{"zero", WorkEstimate{}, []string{"InitialSeats=0 must be at least 1"}},
		{"wrapped negative", WorkEstimate{InitialSeats: uint64(n)}, []string{"InitialSeats=18446744073709551615 exceeds the maximum 1048576"}},
		{"one over", WorkEstimate{InitialSeats: MaxWorkSeats + 1}, []string{"InitialSeats=1048577 exceeds"}},
		{"final", WorkEstimate{InitialSeats: 1, FinalSeats: math.MaxUint64, AdditionalLatency: ms(1)}, []string{"FinalSeats=18446744073709551615 exceeds"}},
		{"negative latency", WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: -ms(1)}, []string{"AdditionalLatency=-1ms must not be negative"}},
		{"long latency", WorkEstimate{InitialSeats: 1, AdditionalLatency: MaxAdditionalLatency + 1}, []string{"AdditionalLatency=1h0m0.000000001s exceeds the maximum 1h0m0s"}},
		{"all at once", WorkEstimate{FinalSeats: MaxWorkSeats + 1, AdditionalLatency: -1}, []string{"InitialSeats=0", "FinalSeats=1048577", "AdditionalLatency=-1ns"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLimiter(t, Config{Queues: 0, ConcurrencyLimit: 8}, LimiterOptions{})
			_, err := l.Wait(boundedCtx(t), 1, tc.work)
			if !errors.Is(err, ErrInvalidWorkEstimate) {
				t.Fatalf("Wait(%+v) = %v, want ErrInvalidWorkEstimate", tc.work, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if diff := cmp.Diff(Counts{}, l.Counts()); diff != "" {
				t.Errorf("Counts() after an invalid estimate (-want +got):\n%s", diff)
			}
		})
	}
	if err := (WorkEstimate{InitialSeats: MaxWorkSeats, FinalSeats: MaxWorkSeats, AdditionalLatency: MaxAdditionalLatency}).Validate(); err != nil {
		t.Errorf("Validate at the maxima = %v", err)
	}
}

// TestLimiterZeroSeatsDoNotBypassTheLimit is the report: 20
// concurrent Waits with WorkEstimate{} under a limit of 8 are all refused.
func TestLimiterZeroSeatsDoNotBypassTheLimit(t *testing.T) {
	l := newTestLimiter(t, Config{Queues: 16, HandSize: 4, QueueLengthLimit: 50, ConcurrencyLimit: 8}, LimiterOptions{})
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if tk, err := l.Wait(boundedCtx(t), 7, WorkEstimate{}); err == nil {
				admitted.Add(1)
				tk.Finish()
			}
		}()
	}
	waitGroup(t, &wg)
	if n := admitted.Load(); n != 0 {
		t.Errorf("%d requests with 0 seats were admitted", n)
	}
}

func TestLimiterCancelledContextTakesNoSeat(t *testing.T) {
	for _, queues := range []int{8, 0, ExemptQueues} {
		l := newTestLimiter(t, Config{Queues: queues, HandSize: 2, QueueLengthLimit: 5, ConcurrencyLimit: 4}, LimiterOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ran := false
		err := l.Do(ctx, 1, one(), func() { ran = true })
		if err != context.Canceled || ran {
			t.Errorf("Queues=%d: Do with a cancelled context = %v (ran %v), want context.Canceled without running", queues, err, ran)
		}
		if c := l.Counts(); c != (Counts{Queues: max(queues, 0)}) {
			t.Errorf("Queues=%d: Counts() = %+v, want nothing counted", queues, c)
		}
	}
}

// TestLimiterDefaultWaitLimit: without a context deadline a request waits
// at most LimiterOptions.WaitLimit (DefaultWaitLimit when zero; none when
// negative).
func TestLimiterDefaultWaitLimit(t *testing.T) {
	for _, tc := range []struct {
		opt, want time.Duration // want 0: no limit
	}{
		{0, DefaultWaitLimit},
		{2 * time.Second, 2 * time.Second},
		{NoWaitLimit, 0},
	} {
		t.Run(fmt.Sprint(tc.opt), func(t *testing.T) {
			clk := &fakeClock{now: t0}
			l := newTestLimiter(t, Config{Queues: 4, HandSize: 1, QueueLengthLimit: 5, ConcurrencyLimit: 1}, LimiterOptions{Clock: clk, WaitLimit: tc.opt})
			tk, err := l.Wait(boundedCtx(t), 1, one())
			if err != nil {
				t.Fatal(err)
			}
			defer tk.Finish()
			got := goWait(context.Background(), l, 1)
			waitFor(t, "the request to queue", func() bool { return l.Counts().Waiting == 1 })
			if tc.want == 0 {
				clk.Advance(24 * time.Hour)
				l.Close()
				if err := recv(t, "Wait after Close", got); err != ErrClosed {
					t.Errorf("Wait = %v, want ErrClosed", err)
				}
				return
			}
			clk.Advance(tc.want - 1)
			if l.Counts().Waiting != 1 {
				t.Fatalf("request left its queue before its wait limit %v", tc.want)
			}
			clk.Advance(1)
			err = recv(t, "Wait after its wait limit", got)
			if !isReason(err, ReasonTimeOut) || !errors.Is(err, ErrWaitLimit) {
				t.Errorf("Wait = %v, want time-out wrapping ErrWaitLimit", err)
			}
			if c := l.Counts(); c.WaitLimitExpired != 1 || c.Cancelled != 1 || c.CallerCancelled != 0 {
				t.Errorf("Counts() = %+v, want one wait-limit expiry", c)
			}
		})
	}
}

func TestUpstreamWaitLimit(t *testing.T) {
	arrived := t0
	ctxWith := func(d time.Duration) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), arrived.Add(d))
		t.Cleanup(cancel)
		return ctx
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		def  time.Duration
		want time.Duration
	}{
		{"no deadline", context.Background(), DefaultWaitLimit, 15 * time.Second},
		{"no deadline, long default", context.Background(), time.Hour, time.Minute},
		{"quarter of the deadline", ctxWith(60 * time.Second), DefaultWaitLimit, 15 * time.Second},
		{"short deadline", ctxWith(2 * time.Second), DefaultWaitLimit, 500 * time.Millisecond},
		{"long deadline", ctxWith(10 * time.Minute), DefaultWaitLimit, time.Minute},
		{"deadline passed", ctxWith(-4 * time.Second), DefaultWaitLimit, -time.Second},
	} {
		if got := UpstreamWaitLimit(tc.ctx, arrived, tc.def); got != tc.want {
			t.Errorf("%s: UpstreamWaitLimit = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLimiterCloseEndsWaiters: Close ends every waiter at once with
// ErrClosed, releases held final seats, lets executing requests finish,
// and leaves no seat, timer or goroutine behind.
func TestLimiterCloseEndsWaiters(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := &fakeClock{now: t0}
	l, err := NewLimiter(Config{Queues: 4, HandSize: 2, QueueLengthLimit: 10, ConcurrencyLimit: 2}, LimiterOptions{Clock: clk, WaitLimit: NoWaitLimit})
	if err != nil {
		t.Fatal(err)
	}
	final := WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: time.Minute}
	lingering, err := l.Wait(boundedCtx(t), 1, final)
	if err != nil {
		t.Fatal(err)
	}
	lingering.Finish() // holds its final seat for a minute
	executing, err := l.Wait(boundedCtx(t), 1, final)
	if err != nil {
		t.Fatal(err)
	}
	var waiters []<-chan error
	for i := range 5 {
		waiters = append(waiters, goWait(context.Background(), l, uint64(i)))
	}
	waitFor(t, "5 waiting requests", func() bool { return l.Counts().Waiting == 5 })
	l.Close()
	for _, w := range waiters {
		if err := recv(t, "a waiter after Close", w); err != ErrClosed {
			t.Errorf("waiter's Wait = %v, want ErrClosed", err)
		}
	}
	if c := l.Counts(); c.SeatsInUse != 1 || c.Waiting != 0 || c.Executing != 1 || c.CallerCancelled != 5 {
		t.Errorf("after Close: %+v, want 1 executing with 1 seat, nothing waiting, 5 cancelled", c)
	}
	executing.Finish() // after Close, final seats are released at once
	if c := l.Counts(); c.SeatsInUse != 0 || !l.IsIdle() {
		t.Errorf("after the last Finish: %+v, want no seat held", c)
	}
	l.mu.Lock()
	timers := len(l.timers)
	l.mu.Unlock()
	if timers != 0 {
		t.Errorf("%d final-seat timers left", timers)
	}
	clk.mu.Lock()
	for _, tm := range clk.timers {
		if !tm.stopped {
			t.Errorf("a timer due at %v is still pending", tm.at)
		}
	}
	clk.mu.Unlock()
	if err := l.Shutdown(boundedCtx(t)); err != nil {
		t.Errorf("Shutdown after everything finished = %v", err)
	}
}

// TestLimiterCloseRealClock is TestLimiterCloseEndsWaiters with the real
// clock and the default wait limit: its timers must not outlive Close.
func TestLimiterCloseRealClock(t *testing.T) {
	defer goleak.VerifyNone(t)
	l, err := NewLimiter(Config{Queues: 4, HandSize: 2, QueueLengthLimit: 10, ConcurrencyLimit: 1}, LimiterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := l.Wait(boundedCtx(t), 1, WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tk.Finish()
	var waiters []<-chan error
	for i := range 3 {
		waiters = append(waiters, goWait(context.Background(), l, uint64(i)))
	}
	waitFor(t, "3 waiting requests", func() bool { return l.Counts().Waiting == 3 })
	if err := l.Shutdown(boundedCtx(t)); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	for _, w := range waiters {
		if err := recv(t, "a waiter after Shutdown", w); err != ErrClosed {
			t.Errorf("waiter's Wait = %v, want ErrClosed", err)
		}
	}
	if c := l.Counts(); c.SeatsInUse != 0 || !l.IsIdle() {
		t.Errorf("after Shutdown: %+v, want no seat held", c)
	}
}

func TestLimiterShutdownWaitsForExecuting(t *testing.T) {
	l := newTestLimiter(t, Config{Queues: 0, ConcurrencyLimit: 1}, LimiterOptions{})
	tk, err := l.Wait(boundedCtx(t), 1, one())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Errorf("Shutdown with a request executing = %v, want DeadlineExceeded", err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Shutdown(boundedCtx(t)) }()
	tk.Finish()
	if err := recv(t, "Shutdown", done); err != nil {
		t.Errorf("Shutdown = %v after the last Finish", err)
	}
}

type flowObserver struct {
	NopObserver
	mu     sync.Mutex
	events []string
}

func (o *flowObserver) add(format string, args ...any) {
	o.mu.Lock()
	o.events = append(o.events, fmt.Sprintf(format, args...))
	o.mu.Unlock()
}
func (o *flowObserver) Rejected(r RequestInfo, reason Reason) {
	o.add("rejected %s/%s key=%v q%d %s", r.FlowSchema, r.FlowDistinguisher, r.Key, r.Queue, reason)
}
func (o *flowObserver) Enqueued(r RequestInfo, n int) {
	o.add("enqueued %s/%s key=%v q%d len %d", r.FlowSchema, r.FlowDistinguisher, r.Key, r.Queue, n)
}
func (o *flowObserver) Dispatched(r RequestInfo, _ time.Duration) {
	o.add("dispatched %s/%s key=%v q%d", r.FlowSchema, r.FlowDistinguisher, r.Key, r.Queue)
}

// TestLimiterFlowIdentity: the flow passed to WaitFlow reaches Dump's text
// and the Observer's events, with the queue index.
func TestLimiterFlowIdentity(t *testing.T) {
	obs := &flowObserver{}
	clk := &fakeClock{now: t0}
	l := newTestLimiter(t, Config{Name: "workload-low", Queues: 8, HandSize: 1, QueueLengthLimit: 1, ConcurrencyLimit: 1}, LimiterOptions{Clock: clk, Observer: obs})
	alice := NewFlow("service-accounts", "alice")
	alice.Key = 7
	if alice.Hash != shufflesharding.FlowHash("service-accounts", "alice") {
		t.Fatalf("NewFlow hash %#x", alice.Hash)
	}
	tk, err := l.WaitFlow(boundedCtx(t), alice, one())
	if err != nil {
		t.Fatal(err)
	}
	q := tk.Queue()
	if tk.Flow() != alice || q < 0 {
		t.Fatalf("Ticket flow %+v queue %d", tk.Flow(), q)
	}
	got := make(chan error, 1)
	go func() {
		tk, err := l.WaitFlow(boundedCtx(t), alice, one())
		if err == nil {
			tk.Finish()
		}
		got <- err
	}()
	waitFor(t, "the second request to queue", func() bool { return l.Counts().Waiting == 1 })
	var sb strings.Builder
	d := l.Dump()
	if err := d.WriteRequests(&sb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("workload-low,      service-accounts, %d,          0,                   alice,", q),
		fmt.Sprintf("workload-low,      service-accounts, %d,          -1,                  alice,", q),
	} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("WriteRequests lacks %q:\n%s", want, sb.String())
		}
	}
	if _, err := l.WaitFlow(boundedCtx(t), alice, one()); !isReason(err, ReasonQueueFull) {
		t.Fatalf("third WaitFlow = %v, want queue-full", err)
	}
	tk.Finish()
	if err := recv(t, "the second WaitFlow", got); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the limiter to go idle", l.IsIdle)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	want := []string{
		fmt.Sprintf("enqueued service-accounts/alice key=7 q%d len 1", q),
		fmt.Sprintf("dispatched service-accounts/alice key=7 q%d", q),
		fmt.Sprintf("enqueued service-accounts/alice key=7 q%d len 1", q),
		fmt.Sprintf("rejected service-accounts/alice key=7 q%d queue-full", q),
		fmt.Sprintf("dispatched service-accounts/alice key=7 q%d", q),
	}
	if diff := cmp.Diff(want, obs.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
