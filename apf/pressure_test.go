package apf

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestPressureIsExecutingPlusWaitingSeatsOverTheCurrentLimit(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, _ := newTestController(t, 4) // work: 3 seats
	if got := levelLimits(c, "work").Current; got != 3 {
		t.Fatalf("work's current limit = %d, want 3", got)
	}
	var admitted []Ticket
	for i := range 3 {
		tk, err := c.Wait(t.Context(), tenant("alice"), nil)
		if err != nil {
			t.Fatal(err)
		}
		admitted = append(admitted, tk)
		if got, want := tk.Pressure(), float64(i+1)/3; got != want {
			t.Errorf("Pressure() with %d of 3 seats held = %v, want %v", i+1, got, want)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, 2)
	for _, user := range []string{"bob", "carol"} {
		go func() {
			tk, err := c.Wait(ctx, tenant(user), nil)
			if err == nil {
				tk.Finish()
			}
			errs <- err
		}()
	}
	waitFor(t, func() bool { return c.Stats()[levelIndex(c, "work")].Counts.Waiting == 2 })
	if got, want := admitted[0].Pressure(), 5.0/3; got != want {
		t.Errorf("Pressure() with 3 seats held and 2 waiting = %v, want %v (above 1 while requests wait)", got, want)
	}
	if got, ok := c.LevelPressure("work"); !ok || got != 5.0/3 {
		t.Errorf("LevelPressure(work) = %v, %v, want %v, true", got, ok, 5.0/3)
	}
	cancel()
	for range 2 {
		if err := recv(t, errs, "cancelled waiter"); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled waiter: %v, want context.Canceled", err)
		}
	}
	admitted[0].Finish()
	if got, want := admitted[1].Pressure(), 2.0/3; got != want {
		t.Errorf("Pressure() after one finished and the waiters left = %v, want %v", got, want)
	}
	admitted[1].Finish()
	admitted[2].Finish()
	if got, ok := c.LevelPressure("work"); !ok || got != 0 {
		t.Errorf("LevelPressure(work) when idle = %v, %v, want 0, true", got, ok)
	}
}

func TestPressureOfExemptAndUnknownLevels(t *testing.T) {
	c, _ := newTestController(t, 4)
	root := &Request{User: User{Name: "root", Groups: []string{"system:masters"}}, Info: RequestInfo{Verb: "get", Path: "/x"}}
	tk, err := c.Wait(t.Context(), root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Pressure(); got != 0 {
		t.Errorf("exempt request's Pressure() = %v, want 0", got)
	}
	tk.Finish()
	if got, ok := c.LevelPressure("no-such-level"); ok || got != 0 {
		t.Errorf("LevelPressure(no-such-level) = %v, %v, want 0, false", got, ok)
	}
}

func TestPressureAllocatesNothing(t *testing.T) {
	c, _ := newTestController(t, 4)
	tk, err := c.Wait(t.Context(), tenant("alice"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Finish()
	if n := testing.AllocsPerRun(100, func() { _ = tk.Pressure(); _, _ = c.LevelPressure("work") }); n != 0 {
		t.Errorf("Pressure and LevelPressure allocate %v times, want 0", n)
	}
}

func TestFormatLoadReport(t *testing.T) {
	for _, tc := range []struct {
		u    float64
		want string
	}{
		{0.5, "TEXT application_utilization=0.500000, rps_fractional=1"},
		{5.0 / 3, "TEXT application_utilization=1.666667, rps_fractional=1"},
		{1.0 / 600, "TEXT application_utilization=0.001667, rps_fractional=1"},
	} {
		if got := FormatLoadReport(tc.u); got != tc.want {
			t.Errorf("FormatLoadReport(%v) = %q, want %q", tc.u, got, tc.want)
		}
	}
}

func TestHandlerLoadMetricsHeaderCarriesTheLevelsPressure(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, _ := newTestController(t, 4) // work: 3 seats, 4 queues of 2
	b := newBlocker()
	h, err := c.Handler(b, HandlerOptions{User: RequestHeaderUser, LoadMetricsHeader: true})
	if err != nil {
		t.Fatal(err)
	}
	on, _ := c.Handler(http.NotFoundHandler(), HandlerOptions{User: RequestHeaderUser, LoadMetricsHeader: true})
	if got := get(t, on, "/api/v1/namespaces/a/pods/p", "root", "system:masters").Header().Values(HeaderEndpointLoadMetrics); got != nil {
		t.Errorf("exempt request: %s = %q, want none", HeaderEndpointLoadMetrics, got)
	}
	if got := get(t, on, "/api/v1/namespaces/a/pods/p", "alice", "tenants").Header().Values(HeaderEndpointLoadMetrics); len(got) != 1 {
		t.Errorf("request alone at its level: %s = %q, want one", HeaderEndpointLoadMetrics, got)
	}
	off, _ := c.Handler(http.NotFoundHandler(), HandlerOptions{User: RequestHeaderUser})
	if got := get(t, off, "/api/v1/namespaces/a/pods/p", "alice", "tenants").Header().Values(HeaderEndpointLoadMetrics); got != nil {
		t.Errorf("without LoadMetricsHeader: %s = %q, want none", HeaderEndpointLoadMetrics, got)
	}
	headers := make(chan []string, 16)
	for range 3 {
		go func() {
			headers <- get(t, h, "/api/v1/namespaces/a/pods/p", "alice", "tenants").Header().Values(HeaderEndpointLoadMetrics)
		}()
		recv(t, b.entered, "handler entered")
	}
	// The first three were admitted holding 1, 2 and 3 of 3 seats; now
	// alice's queues fill (hand 2, length 2) and the next is rejected with
	// 3 seats held and 4 waiting.
	for range 4 {
		go func() {
			headers <- get(t, h, "/api/v1/namespaces/a/pods/p", "alice", "tenants").Header().Values(HeaderEndpointLoadMetrics)
		}()
	}
	waitFor(t, func() bool { return c.Stats()[levelIndex(c, "work")].Counts.Waiting == 4 })
	rec := get(t, h, "/api/v1/namespaces/a/pods/p", "alice", "tenants")
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("request to full queues answered %d, want 429", rec.Code)
	}
	if diff := cmp.Diff([]string{FormatLoadReport(7.0 / 3)}, rec.Header().Values(HeaderEndpointLoadMetrics)); diff != "" {
		t.Errorf("rejected request's %s (-want +got):\n%s", HeaderEndpointLoadMetrics, diff)
	}
	close(b.release)
	got := map[string]int{}
	for range 7 {
		for _, v := range recv(t, headers, "response") {
			got[v]++
		}
	}
	// Each of the four that waited was admitted with 3 seats in use and
	// fewer waiting, so each saw a pressure of at least 1.
	for _, want := range []float64{1.0 / 3, 2.0 / 3, 1} {
		if got[FormatLoadReport(want)] == 0 {
			t.Errorf("no admitted response carried %q; got %v", FormatLoadReport(want), got)
		}
	}
	n := 0
	for _, v := range got {
		n += v
	}
	if n != 7 {
		t.Errorf("admitted responses with the header = %d, want 7 (%v)", n, got)
	}
}
