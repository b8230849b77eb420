package loadtest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	u := UserResult{}
	if got := u.Percentile(99); got != 0 {
		t.Errorf("Percentile of no waits = %v, want 0", got)
	}
	for i := 1; i <= 100; i++ {
		u.Waits = append(u.Waits, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := u.Percentile(c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestRunValidation(t *testing.T) {
	if _, err := Run(t.Context(), Config{}); err == nil {
		t.Error("Run(empty config) = nil error")
	}
	if _, err := Run(t.Context(), Config{URL: "http://x", Duration: time.Second, Users: []User{{Name: "a"}}}); err == nil {
		t.Error("Run(user without concurrency) = nil error")
	}
	if _, err := Run(t.Context(), Config{URL: "http://x", Duration: time.Second, Users: []User{{Name: "a", Concurrency: 1, Rate: -1}}}); err == nil {
		t.Error("Run(negative rate) = nil error")
	}
}

// A paced user sends its offered requests on schedule, and no more.
func TestRunPaced(t *testing.T) {
	var mu sync.Mutex
	var times []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
	}))
	defer srv.Close()
	rep, err := Run(t.Context(), Config{URL: srv.URL, Duration: 300 * time.Millisecond,
		Users: []User{{Name: "p", Concurrency: 2, Rate: 50}, {Name: "q", Concurrency: 1, Rate: 50}}})
	if err != nil {
		t.Fatal(err)
	}
	p, q := rep.User("p"), rep.User("q")
	// p's requests are due at 0, 20, ..., 280 ms; q's half an interval later.
	if p.Offered != 15 || q.Offered != 15 {
		t.Errorf("Offered = %d, %d; want 15, 15", p.Offered, q.Offered)
	}
	if p.Sent != p.Offered || p.Served != p.Offered || q.Served != q.Offered {
		t.Errorf("p sent %d served %d, q served %d; want every offered request served", p.Sent, p.Served, q.Served)
	}
	if len(times) != 30 {
		t.Fatalf("server saw %d requests, want 30", len(times))
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	if span := times[len(times)-1].Sub(times[0]); span < 250*time.Millisecond {
		t.Errorf("requests spread over %v, want about 290 ms (paced, not sent at once)", span)
	}
}

// Latencies are recorded per served request, from send to response, and
// WriteGoodput reports them with the goodput.
func TestLatenciesAndGoodput(t *testing.T) {
	const work = 20 * time.Millisecond
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(work)
	}))
	defer ts.Close()
	rep, err := Run(t.Context(), Config{URL: ts.URL, Users: []User{{Name: "a", Concurrency: 2}}, Duration: 300 * time.Millisecond, Work: work})
	if err != nil {
		t.Fatal(err)
	}
	u := rep.User("a")
	if len(u.Latencies) != u.Served || u.Served == 0 || !slices.IsSorted(u.Latencies) {
		t.Fatalf("latencies %d (sorted %v) for %d served, want one per served request, sorted", len(u.Latencies), slices.IsSorted(u.Latencies), u.Served)
	}
	if p50 := u.LatencyPercentile(50); p50 < work || p50 > 10*work {
		t.Errorf("LatencyPercentile(50) = %v, want between the handler's %v and 10x it", p50, work)
	}
	var b strings.Builder
	if err := rep.WriteGoodput(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "goodput/s") || !strings.Contains(b.String(), "latency p99") {
		t.Errorf("WriteGoodput = %q, want goodput/s and latency p99 columns", b.String())
	}
}

// WarmLatencies leave out the requests sent within Warmup: a server that
// sleeps 300 ms on the requests of its first 100 ms (counted from before
// the run starts) shows its slowness in Latencies only.
func TestWarmLatenciesLeaveOutTheWarmup(t *testing.T) {
	const warmup = 100 * time.Millisecond
	started := time.Now()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if time.Since(started) < warmup {
			time.Sleep(300 * time.Millisecond)
		}
	}))
	defer ts.Close()
	rep, err := Run(t.Context(), Config{URL: ts.URL, Users: []User{{Name: "a", Concurrency: 2, Rate: 100}}, Duration: 600 * time.Millisecond, Warmup: warmup})
	if err != nil {
		t.Fatal(err)
	}
	u := rep.User("a")
	if len(u.WarmLatencies) == 0 || len(u.WarmLatencies) >= len(u.Latencies) || !slices.IsSorted(u.WarmLatencies) {
		t.Fatalf("%d warm latencies (sorted %v) of %d, want some but not all, sorted", len(u.WarmLatencies), slices.IsSorted(u.WarmLatencies), len(u.Latencies))
	}
	if slow := u.Latencies[len(u.Latencies)-1]; slow < 300*time.Millisecond {
		t.Errorf("slowest latency %v, want the warmup's 300 ms or more", slow)
	}
	// A request sent just before the warmup ends may be answered after
	// it, but none sent after it sleeps.
	if slow := u.WarmLatencies[len(u.WarmLatencies)-1]; slow >= 300*time.Millisecond {
		t.Errorf("slowest warm latency %v, want under the warmup's 300 ms", slow)
	}
	if _, err := Run(t.Context(), Config{URL: ts.URL, Users: []User{{Name: "a", Concurrency: 1}}, Duration: time.Second, Warmup: time.Second}); err == nil {
		t.Error("Run(Warmup = Duration) = nil error")
	}
}
