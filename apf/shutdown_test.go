package apf

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Shutdown refuses new requests at once (with the PF headers and
// Retry-After through the middleware) and lets every executing and queued
// request run: none is lost, and no goroutine is left.
func TestShutdownDrains(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, _ := newTestController(t, 4) // work: 3 seats, 4 queues of 2
	b := newBlocker()
	h, err := c.Handler(b, HandlerOptions{User: RequestHeaderUser})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6 // 3 execute, 3 wait
	codes := make(chan int, n)
	for i := range n {
		go func() { codes <- get(t, h, "/api/v1/pods", string(rune('a'+i)), "tenants").Code }()
	}
	waitFor(t, func() bool {
		qs := c.Dump()[levelIndex(c, "work")].QueueSet
		return qs.Executing == 3 && qs.Waiting == 3
	})
	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutdown <- c.Shutdown(ctx)
	}()
	waitFor(t, func() bool { return c.draining.Load() })

	rec := get(t, h, "/api/v1/pods", "late", "tenants")
	if rec.Code != http.StatusTooManyRequests {
		t.Errorf("request during Shutdown: status %d, want 429", rec.Code)
	}
	for _, hdr := range []string{"Retry-After", "X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID"} {
		if rec.Header().Get(hdr) == "" {
			t.Errorf("request during Shutdown: no %s header", hdr)
		}
	}
	if _, err := c.Wait(context.Background(), tenant("late"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Wait during Shutdown = %v, want ErrClosed", err)
	}

	close(b.release)
	for range n {
		select {
		case code := <-codes:
			if code != http.StatusOK {
				t.Errorf("request in flight at Shutdown: status %d, want 200", code)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("requests in flight at Shutdown did not finish")
		}
	}
	select {
	case err := <-shutdown:
		if err != nil {
			t.Errorf("Shutdown = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	if !c.closed.Load() {
		t.Error("controller not closed after Shutdown")
	}
}

// When ctx ends first, Shutdown closes the controller: waiting requests end
// with a ClosedError carrying their classification, executing ones can
// still Finish.
func TestShutdownDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, _ := newTestController(t, 4)
	var running []Ticket
	for _, u := range []string{"a", "b", "c"} {
		tk, err := c.Wait(context.Background(), tenant(u), nil)
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, tk)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := c.Wait(context.Background(), tenant("d"), nil)
		waiting <- err
	}()
	waitFor(t, func() bool { return c.Dump()[levelIndex(c, "work")].QueueSet.Waiting == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with requests left = %v, want DeadlineExceeded", err)
	}
	select {
	case err := <-waiting:
		var ce *ClosedError
		if !errors.As(err, &ce) || ce.Classification.PriorityLevel != "work" || ce.RetryAfter != ShutdownRetryAfter {
			t.Errorf("waiting request at Shutdown's end: %v, want a ClosedError for work with Retry-After %d", err, ShutdownRetryAfter)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiting request not ended by Shutdown")
	}
	for _, tk := range running {
		tk.Finish()
	}
	if qs := c.Dump()[levelIndex(c, "work")].QueueSet; qs.Executing != 0 || qs.SeatsInUse != 0 {
		t.Errorf("after Finish: executing %d, seats %d; want 0, 0", qs.Executing, qs.SeatsInUse)
	}
}
