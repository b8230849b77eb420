package flowcontrol

import (
	"context"
	"sync"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/fairslice/fairslice/apf"
)

// With Options.Adaptive, an execution whose request was cancelled (the
// client went away) is no latency sample, as in apf's own middleware: a
// run of cut-short executions leaves the level's baseline where the
// probe put it. An execution that outlives the queue-wait deadline of
// Handle's context, its client still there, is a sample.
func TestHandleAbandonedExecutionsAreNoSamples(t *testing.T) {
	const work = 20 * time.Millisecond
	clk := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	e := startEnvWith(t, Options{Clock: clk, Adaptive: &apf.AdaptiveOptions{Min: 10}}, testObjects(), "tenants")
	// run Handles n requests one after the other, each executing for d
	// on the step clock; end, if set, is called during the execution
	// with the request's context's cancel function.
	run := func(n int, d time.Duration, newCtx func() (context.Context, context.CancelFunc), end func(ctx context.Context, cancel context.CancelFunc)) {
		t.Helper()
		for range n {
			ctx, cancel := newCtx()
			executed := false
			e.c.Handle(ctx, digest("alice", "tenants"),
				func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string) {},
				func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} },
				func(bool) {}, func() {
					executed = true
					clk.Advance(d)
					if end != nil {
						end(ctx, cancel)
					}
				})
			cancel()
			if !executed {
				t.Fatal("a request one at a time was not executed")
			}
		}
	}
	background := func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }
	baseline := func() time.Duration {
		for _, d := range e.c.Dump() {
			if d.Name == "tenants" {
				return d.Baseline
			}
		}
		t.Fatal("Dump has no level tenants")
		return 0
	}

	// near: apf measures latencies in buckets up to 1/16 of their value
	// wide.
	near := func(got, want time.Duration) bool { return got >= want-want/16 && got <= want+want/16 }

	run(50, work, background, nil) // the probe: 1 s of executions
	if got := baseline(); !near(got, work) {
		t.Fatalf("baseline after the probe = %v, want %v (to 1/16)", got, work)
	}
	cancelled := func(_ context.Context, cancel context.CancelFunc) { cancel() }
	run(500, time.Millisecond, background, cancelled) // clients leave after 1 ms
	run(50, work, background, nil)
	if got := baseline(); !near(got, work) {
		t.Errorf("baseline after cancelled requests = %v, want %v to 1/16 (abandoned executions are no samples)", got, work)
	}

	// Handle's context expires during each execution, as the wait limit
	// of upstream's filter does for a long request: those 1 ms
	// executions are samples, and the baseline follows them down.
	waitLimited := func() (context.Context, context.CancelFunc) {
		ctx := &expiringCtx{Context: context.Background(), done: make(chan struct{})}
		return ctx, func() {}
	}
	expired := func(ctx context.Context, _ context.CancelFunc) { ctx.(*expiringCtx).expire() }
	run(200, time.Millisecond, waitLimited, expired)
	if got := baseline(); !near(got, time.Millisecond) {
		t.Errorf("baseline after executions past the wait deadline = %v, want 1ms to 1/16 (their clients were still there)", got)
	}
}

// expiringCtx is a context whose deadline passes when expire is called,
// not on a wall clock, so that it always expires during the execution
// however slow the machine (a real 1 ms timeout could expire before
// Handle dispatched).
type expiringCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func (c *expiringCtx) expire()               { c.once.Do(func() { close(c.done) }) }
func (c *expiringCtx) Done() <-chan struct{} { return c.done }
func (c *expiringCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
