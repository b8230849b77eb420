package loadtest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// A paced user sends its offered requests on schedule, and no more: each
// at its due time, k/Rate after the start plus its phase. The run is on a
// simulated clock, so the schedule is exact whatever the machine's load,
// and a pacing bug (no pause, another rate or phase) changes the times.
func TestRunPaced(t *testing.T) {
	clk := newSimClock()
	start := clk.Now()
	type sent struct {
		User string
		At   time.Duration // after the start
	}
	var mu sync.Mutex
	var got []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, sent{r.Header.Get("X-Remote-User"), clk.Now().Sub(start)})
		mu.Unlock()
	}))
	defer srv.Close()
	rep, err := run(t.Context(), Config{URL: srv.URL, Duration: 300 * time.Millisecond,
		Users: []User{{Name: "p", Concurrency: 2, Rate: 50}, {Name: "q", Concurrency: 1, Rate: 50}}}, clk)
	if err != nil {
		t.Fatal(err)
	}
	// p's requests are due at 0, 20, ..., 280 ms; q's half an interval
	// later, at 10, 30, ..., 290 ms.
	var want []sent
	for k := range 15 {
		at := time.Duration(k) * 20 * time.Millisecond
		want = append(want, sent{"p", at}, sent{"q", at + 10*time.Millisecond})
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests the server saw (-want +got):\n%s", diff)
	}
	p, q := rep.User("p"), rep.User("q")
	if p.Offered != 15 || q.Offered != 15 {
		t.Errorf("Offered = %d, %d; want 15, 15", p.Offered, q.Offered)
	}
	if p.Sent != p.Offered || p.Served != p.Offered || q.Served != q.Offered || p.Windowed != p.Offered {
		t.Errorf("p sent %d served %d (%d in the window), q served %d; want every offered request served in the window",
			p.Sent, p.Served, p.Windowed, q.Served)
	}
}

// Latencies are recorded per served request, from send to response, and
// WriteGoodput reports them with the goodput. On a simulated clock every
// request takes exactly the handler's work: two closed-loop senders
// complete a pair every 20 ms, the pair answered at the end of the 300 ms
// window outside it.
func TestLatenciesAndGoodput(t *testing.T) {
	const work = 20 * time.Millisecond
	clk := newSimClock()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clk.Hold(work)
	}))
	defer ts.Close()
	rep, err := run(t.Context(), Config{URL: ts.URL, Users: []User{{Name: "a", Concurrency: 2}}, Duration: 300 * time.Millisecond, Work: work}, clk)
	if err != nil {
		t.Fatal(err)
	}
	u := rep.User("a")
	if u.Served != 30 || u.Windowed != 28 {
		t.Errorf("served %d, %d in the window; want 30, 28", u.Served, u.Windowed)
	}
	if want := slices.Repeat([]time.Duration{work}, u.Served); !slices.Equal(u.Latencies, want) {
		t.Errorf("latencies %v, want %d of %v (one per served request, send to response)", u.Latencies, u.Served, work)
	}
	var b strings.Builder
	if err := rep.WriteGoodput(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "goodput/s") || !strings.Contains(b.String(), "latency p99") || !strings.Contains(b.String(), "93.3") {
		t.Errorf("WriteGoodput = %q, want goodput/s and latency p99 columns, goodput 93.3 (28 in 0.3 s)", b.String())
	}
}

// WarmLatencies leave out the requests sent within Warmup: a server that
// holds the requests of the first 100 ms for 300 ms (on a simulated clock)
// shows its slowness in Latencies only.
func TestWarmLatenciesLeaveOutTheWarmup(t *testing.T) {
	const warmup = 100 * time.Millisecond
	clk := newSimClock()
	start := clk.Now()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if clk.Now().Sub(start) < warmup {
			clk.Hold(300 * time.Millisecond)
		} else {
			clk.Hold(time.Millisecond)
		}
	}))
	defer ts.Close()
	rep, err := run(t.Context(), Config{URL: ts.URL, Users: []User{{Name: "a", Concurrency: 2, Rate: 100}}, Duration: 600 * time.Millisecond, Warmup: warmup}, clk)
	if err != nil {
		t.Fatal(err)
	}
	// The requests due at 0 and 10 ms take 300 ms each; the rest, sent
	// from 300 ms on, 1 ms.
	u := rep.User("a")
	if u.Offered != 60 || u.Served != u.Offered {
		t.Errorf("offered %d, served %d; want 60, all", u.Offered, u.Served)
	}
	want := append(slices.Repeat([]time.Duration{time.Millisecond}, u.Served-2), 300*time.Millisecond, 300*time.Millisecond)
	if !slices.Equal(u.Latencies, want) {
		t.Errorf("latencies %v, want two of 300ms, the other %d of 1ms", u.Latencies, u.Served-2)
	}
	if !slices.Equal(u.WarmLatencies, want[:u.Served-2]) {
		t.Errorf("warm latencies %v, want the %d of 1ms", u.WarmLatencies, u.Served-2)
	}
	if _, err := Run(t.Context(), Config{URL: ts.URL, Users: []User{{Name: "a", Concurrency: 1}}, Duration: time.Second, Warmup: time.Second}); err == nil {
		t.Error("Run(Warmup = Duration) = nil error")
	}
}
