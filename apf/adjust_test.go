package apf

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// authenticated is a request global-default takes in the bootstrap
// configuration.
func authenticated(user string) *Request {
	return &Request{
		User: User{Name: user, Groups: []string{"system:authenticated"}},
		Info: RequestInfo{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Resource: "pods", Namespace: "ns", Name: "p", Path: "/api/v1/namespaces/ns/pods/p"},
	}
}

type waitResult struct {
	t   Ticket
	err error
}

// waitAsync runs Wait in a goroutine and returns once the request is
// admitted or waits in a queue of level.
func waitAsync(t *testing.T, c *Controller, level string, req *Request) chan waitResult {
	t.Helper()
	done := make(chan waitResult, 1)
	go func() {
		tk, err := c.Wait(context.Background(), req, nil)
		done <- waitResult{tk, err}
	}()
	waitFor(t, func() bool {
		if len(done) > 0 {
			return true
		}
		qs := c.Dump()[levelIndex(c, level)].QueueSet
		return qs.Waiting > 0
	})
	return done
}

// zeroOptionsController is New(nil) with the zero Options but for the
// server concurrency and a fake clock; it is closed when the test ends.
func zeroOptionsController(t *testing.T, serverCL int) (*Controller, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	c, err := New(nil, Options{ServerConcurrencyLimit: serverCL, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, clk
}

// With the zero Options a level that starts at 0 seats (global-default at a
// small server concurrency) gets seats at the controller's own periodic
// adjustment: a lone request is admitted within one period, not never.
func TestZeroOptionsAdmitWithinOnePeriod(t *testing.T) {
	for _, serverCL := range []int{4, 8, 16} {
		t.Run(fmt.Sprintf("server=%d", serverCL), func(t *testing.T) {
			c, clk := zeroOptionsController(t, serverCL)
			lim := c.Dump()[levelIndex(c, "global-default")].Limits
			if serverCL < 16 && lim.Current != 0 {
				t.Fatalf("global-default's initial limit at %d seats = %d, want 0 (the case under test)", serverCL, lim.Current)
			}
			done := waitAsync(t, c, "global-default", authenticated("alice"))
			clk.Step(BorrowingAdjustmentPeriod)
			r := recv(t, done, "lone request")
			if r.err != nil {
				t.Fatalf("Wait = %v, want admitted", r.err)
			}
			if w := r.t.WaitTime(); w > BorrowingAdjustmentPeriod {
				t.Errorf("Ticket.WaitTime() = %v, want at most %v", w, BorrowingAdjustmentPeriod)
			}
			r.t.Finish()
		})
	}
}

// With ManualAdjustment nothing adjusts until the caller does: the
// explicit opt-out is what it says.
func TestManualAdjustment(t *testing.T) {
	clk := newFakeClock()
	c, err := New(nil, Options{ServerConcurrencyLimit: 4, Clock: clk, AdjustPeriod: ManualAdjustment})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := waitAsync(t, c, "global-default", authenticated("alice"))
	clk.Step(3 * BorrowingAdjustmentPeriod)
	if len(done) > 0 {
		t.Fatal("admitted without an adjustment, want waiting")
	}
	c.AdjustBorrowing(clk.Now())
	if r := recv(t, done, "after AdjustBorrowing"); r.err != nil {
		t.Fatalf("Wait = %v, want admitted", r.err)
	} else {
		r.t.Finish()
	}
}

// AdjustOnStarvation admits the first request at a level with 0 seats at
// once, with no time passing.
func TestAdjustOnStarvation(t *testing.T) {
	for _, serverCL := range []int{4, 8} {
		t.Run(fmt.Sprintf("server=%d", serverCL), func(t *testing.T) {
			clk := newFakeClock()
			opts := StandaloneOptions(serverCL)
			opts.Clock = clk
			c, err := New(nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			done := make(chan waitResult, 1)
			go func() {
				tk, err := c.Wait(context.Background(), authenticated("alice"), nil)
				done <- waitResult{tk, err}
			}()
			r := recv(t, done, "first request")
			if r.err != nil {
				t.Fatalf("Wait = %v, want admitted", r.err)
			}
			if w := r.t.WaitTime(); w != 0 {
				t.Errorf("Ticket.WaitTime() = %v, want 0", w)
			}
			if got := c.Dump()[levelIndex(c, "global-default")].Limits.Current; got < 1 {
				t.Errorf("global-default's limit after the starvation adjustment = %d, want at least 1", got)
			}
			r.t.Finish()
		})
	}
}

// The same through the middleware: a lone request from an authenticated
// user at 4, 8 and 16 seats is served within one period.
func TestHandlerZeroOptionsAdmitWithinOnePeriod(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, serverCL := range []int{4, 8, 16} {
		t.Run(fmt.Sprintf("server=%d", serverCL), func(t *testing.T) {
			c, clk := zeroOptionsController(t, serverCL)
			h, err := c.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), HandlerOptions{User: RequestHeaderUser})
			if err != nil {
				t.Fatal(err)
			}
			codes := make(chan int, 1)
			go func() {
				req := httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods", nil)
				req.Header.Set(HeaderRemoteUser, "alice")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				codes <- rec.Code
			}()
			waitFor(t, func() bool { return len(codes) > 0 || c.Dump()[levelIndex(c, "global-default")].QueueSet.Waiting > 0 })
			clk.Step(BorrowingAdjustmentPeriod)
			select {
			case code := <-codes:
				if code != http.StatusOK {
					t.Errorf("status = %d, want 200", code)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("request not served within 5 s of real time")
			}
		})
	}
}

// The periodic adjustment runs on the Clock, re-arms itself, and stops at
// Close.
func TestPeriodicAdjustmentOnClock(t *testing.T) {
	clk := newFakeClock()
	obs := &limitCounter{}
	c, err := New(nil, Options{ServerConcurrencyLimit: 100, Clock: clk, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	perRound := obs.n.Load() // the configuration's own adjustment: one event per level
	clk.Step(3*BorrowingAdjustmentPeriod + time.Second)
	if got := obs.n.Load(); got != 4*perRound {
		t.Errorf("limit events after 3 periods = %d, want %d (3 adjustments)", got, 4*perRound)
	}
	c.Close()
	clk.Step(2 * BorrowingAdjustmentPeriod)
	if got := obs.n.Load(); got != 4*perRound {
		t.Errorf("limit events after Close = %d, want %d", got, 4*perRound)
	}
}
