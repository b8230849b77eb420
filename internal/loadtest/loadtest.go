// Package loadtest drives an HTTP server with closed-loop users (each user
// keeps a fixed number of requests in flight) and paced users (each sends
// at a fixed rate, with at most a fixed number in flight) and reports, per
// user, how many requests were served and rejected and how long they
// waited. It is
// the load generator of kube/examples/apiserver, of the apf end-to-end test and
// of the tour. Loopback use is what it is built for; it sends the
// Kubernetes request-header identity (X-Remote-User, X-Remote-Group).
package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"
)

// HeaderWait is the response header in which a server may report, in
// seconds, how long the request waited for admission (kube/examples/apiserver
// sets it). Without it the wait is the response time minus Config.Work.
const HeaderWait = "X-Fairslice-Wait-Seconds"

// User is one client identity and its load.
type User struct {
	Name   string
	Groups []string
	// Concurrency is the number of requests the user keeps in flight, or
	// with a Rate the most it has in flight.
	Concurrency int
	// Rate, if positive, paces the user: its k-th request is due at
	// k/Rate seconds after the start (plus a phase that spreads paced
	// users over one interval), and is sent then, or as soon as one of
	// its Concurrency requests in flight returns if it is late. Requests
	// not sent by the end of the run are not sent. Zero: a closed loop
	// without pause.
	Rate float64
}

// Config describes a run.
type Config struct {
	// URL is the base URL of the server, such as http://127.0.0.1:8080.
	URL string
	// Path is requested by every user; default a pod list in namespace
	// default, /api/v1/namespaces/default/pods.
	Path string
	// Client defaults to one with enough idle connections per host for
	// every in-flight request.
	Client *http.Client
	Users  []User
	// Duration of the run. Requests in flight at its end are completed and
	// counted, but only responses received within it count as throughput
	// (Windowed), so that users with many requests in flight, served after
	// the others stopped competing, are not favoured.
	Duration time.Duration
	// Work is the server's hold time per request, subtracted from the
	// response time when the server reports no wait.
	Work time.Duration
	// MaxRequests, if positive, stops the run after that many requests
	// have been sent in total.
	MaxRequests int
	// Warmup, if positive, is the start of the run whose requests are
	// left out of UserResult.WarmLatencies: the latencies once a server
	// that adapts (apf.Options.Adaptive) has had that long to settle. It
	// changes nothing else. Must be shorter than Duration.
	Warmup time.Duration
}

// UserResult is one user's outcome over the measured window.
type UserResult struct {
	Name string
	// Sent counts requests; Served (2xx), Rejected (429) and Errors
	// (anything else, transport errors included) their outcomes, which
	// add up to Sent.
	Sent, Served, Rejected, Errors int
	// Windowed counts the requests served within the run's Duration.
	Windowed int
	// Offered is, for a paced user, the number of its requests due within
	// the run's Duration (Served/Offered is the share of its demand it
	// got); 0 for a closed-loop user.
	Offered int
	// Waits of the served requests, sorted.
	Waits []time.Duration
	// Latencies of the served requests (send to response), sorted.
	Latencies []time.Duration
	// WarmLatencies are the Latencies of the served requests sent after
	// Config.Warmup, sorted; nil without a Warmup.
	WarmLatencies []time.Duration
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of the waits, or 0
// without any.
func (u *UserResult) Percentile(p float64) time.Duration { return percentile(u.Waits, p) }

// LatencyPercentile returns the p-th percentile (0 < p ≤ 100) of the
// latencies, or 0 without any.
func (u *UserResult) LatencyPercentile(p float64) time.Duration { return percentile(u.Latencies, p) }

// percentile is the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Report is the outcome of a run.
type Report struct {
	Users []UserResult
	// Window is the configured Duration; Duration is how long the run
	// took, tail included.
	Window, Duration time.Duration
}

// Total returns the served, rejected and failed requests of every user.
func (r *Report) Total() (served, rejected, errs int) {
	for _, u := range r.Users {
		served += u.Served
		rejected += u.Rejected
		errs += u.Errors
	}
	return served, rejected, errs
}

// User returns the result of the named user, or nil.
func (r *Report) User(name string) *UserResult {
	for i := range r.Users {
		if r.Users[i].Name == name {
			return &r.Users[i]
		}
	}
	return nil
}

// Write prints one line per user: served, rejected, errors, throughput
// and wait percentiles.
func (r *Report) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "user\toffered\tsent\tserved\t429s\terrors\tserved/s\twait p50\twait p90\twait p99\t")
	for i := range r.Users {
		u := &r.Users[i]
		offered := "-"
		if u.Offered > 0 {
			offered = strconv.Itoa(u.Offered)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%.1f\t%v\t%v\t%v\t\n", u.Name, offered, u.Sent, u.Served, u.Rejected, u.Errors,
			float64(u.Windowed)/r.Window.Seconds(), round(u.Percentile(50)), round(u.Percentile(90)), round(u.Percentile(99)))
	}
	return tw.Flush()
}

// WriteGoodput prints, per user, its goodput (requests served within the
// run's Duration, per second) and its latency percentiles p50 and p99.
func (r *Report) WriteGoodput(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "user\tgoodput/s\tlatency p50\tlatency p99\t")
	for i := range r.Users {
		u := &r.Users[i]
		fmt.Fprintf(tw, "%s\t%.1f\t%v\t%v\t\n", u.Name, float64(u.Windowed)/r.Window.Seconds(),
			round(u.LatencyPercentile(50)), round(u.LatencyPercentile(99)))
	}
	return tw.Flush()
}

func round(d time.Duration) time.Duration {
	if d > time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// Run drives the server until cfg.Duration has passed, ctx ends or
// cfg.MaxRequests have been sent, waits for every request in flight to
// finish, and reports. It fails only on an invalid Config.
func Run(ctx context.Context, cfg Config) (Report, error) {
	return run(ctx, cfg, wallClock{})
}

// run is Run on clk.
func run(ctx context.Context, cfg Config, clk clock) (Report, error) {
	inflight, err := cfg.check()
	if err != nil {
		return Report{}, err
	}
	if cfg.Path == "" {
		cfg.Path = "/api/v1/namespaces/default/pods"
	}
	rn := &runner{cfg: cfg, client: cfg.Client, clk: clk}
	if rn.client == nil {
		rn.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: inflight, MaxConnsPerHost: inflight}}
		defer rn.client.CloseIdleConnections()
	}
	rn.start = clk.Now()
	rn.end = rn.start.Add(cfg.Duration)
	ctx, cancel := clk.WithDeadline(ctx, rn.end)
	defer cancel()
	rep := Report{Users: make([]UserResult, len(cfg.Users)), Window: cfg.Duration}
	var wg sync.WaitGroup
	paced := 0
	for _, u := range cfg.Users {
		if u.Rate > 0 {
			paced++
		}
	}
	ipaced := 0
	clk.Start(inflight)
	for i, u := range cfg.Users {
		res := &rep.Users[i]
		res.Name = u.Name
		var mu sync.Mutex
		due := func() (time.Time, bool) { return rn.start, true }
		if u.Rate > 0 {
			due = rn.schedule(u.Rate, res, &mu, ipaced, paced)
			ipaced++
		}
		for range u.Concurrency {
			wg.Go(func() {
				defer clk.Done()
				rn.send(ctx, &u, res, &mu, due)
			})
		}
	}
	wg.Wait()
	rep.Duration = clk.Now().Sub(rn.start)
	for i := range rep.Users {
		slices.Sort(rep.Users[i].Waits)
		slices.Sort(rep.Users[i].Latencies)
		slices.Sort(rep.Users[i].WarmLatencies)
	}
	return rep, nil
}

// check returns the sum of the users' concurrency, or the first problem
// of cfg.
func (cfg *Config) check() (int, error) {
	if cfg.URL == "" || len(cfg.Users) == 0 || cfg.Duration <= 0 {
		return 0, errors.New("loadtest: URL, Users and a positive Duration are required")
	}
	inflight := 0
	for _, u := range cfg.Users {
		if u.Concurrency <= 0 {
			return 0, fmt.Errorf("loadtest: user %q: Concurrency=%d must be positive", u.Name, u.Concurrency)
		}
		if u.Rate < 0 || math.IsNaN(u.Rate) || math.IsInf(u.Rate, 0) {
			return 0, fmt.Errorf("loadtest: user %q: Rate=%v must be a finite number ≥ 0", u.Name, u.Rate)
		}
		inflight += u.Concurrency
	}
	if cfg.Warmup < 0 || cfg.Warmup >= cfg.Duration {
		return 0, fmt.Errorf("loadtest: Warmup=%v must be at least 0 and shorter than Duration=%v", cfg.Warmup, cfg.Duration)
	}
	return inflight, nil
}

// runner is one Run: its client, window and request budget.
type runner struct {
	cfg        Config
	client     *http.Client
	clk        clock
	start, end time.Time

	mu    sync.Mutex
	nsent int
}

// take counts one request against cfg.MaxRequests, false when none is left.
func (rn *runner) take() bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.cfg.MaxRequests > 0 && rn.nsent >= rn.cfg.MaxRequests {
		return false
	}
	rn.nsent++
	return true
}

// schedule sets res.Offered for a user sending rate requests a second, the
// ipaced-th of paced such users (their phases spread over one interval),
// and returns when its next request is due, false when it is not due
// within the run. mu guards the schedule.
func (rn *runner) schedule(rate float64, res *UserResult, mu *sync.Mutex, ipaced, paced int) func() (time.Time, bool) {
	interval := time.Duration(float64(time.Second) / rate)
	phase := interval * time.Duration(ipaced) / time.Duration(paced)
	res.Offered = int((rn.cfg.Duration - phase + interval - 1) / interval)
	next := 0
	return func() (time.Time, bool) {
		mu.Lock()
		k := next
		next++
		mu.Unlock()
		return rn.start.Add(phase + time.Duration(k)*interval), k < res.Offered
	}
}

// send is one of u's concurrent senders: it sends u's requests when due
// until the run ends, and records each outcome in res under mu.
func (rn *runner) send(ctx context.Context, u *User, res *UserResult, mu *sync.Mutex, due func() (time.Time, bool)) {
	for ctx.Err() == nil {
		at, ok := due()
		if !ok || !rn.clk.SleepUntil(ctx, at) || !rn.take() {
			return
		}
		warm := rn.cfg.Warmup > 0 && rn.clk.Now().Sub(rn.start) >= rn.cfg.Warmup
		code, wait, latency, err := do(rn.client, rn.clk, rn.cfg, u)
		inWindow := rn.clk.Now().Before(rn.end)
		mu.Lock()
		res.Sent++
		switch {
		case err != nil:
			res.Errors++
		case code/100 == 2:
			res.Served++
			if inWindow {
				res.Windowed++
			}
			res.Waits = append(res.Waits, wait)
			res.Latencies = append(res.Latencies, latency)
			if warm {
				res.WarmLatencies = append(res.WarmLatencies, latency)
			}
		case code == http.StatusTooManyRequests:
			res.Rejected++
		default:
			res.Errors++
		}
		mu.Unlock()
	}
}

// clock is the time a run reads and waits on: the machine's in Run, a
// simulated one in tests, so that a test of the pacing does not depend on
// how fast the machine is.
type clock interface {
	Now() time.Time
	// WithDeadline returns a context that also ends when the clock
	// reaches d.
	WithDeadline(ctx context.Context, d time.Time) (context.Context, context.CancelFunc)
	// SleepUntil waits until t, false if ctx ends first.
	SleepUntil(ctx context.Context, t time.Time) bool
	// Start announces n senders about to start, Done that one of them
	// returned; a simulated clock moves only while every sender that has
	// not returned waits in SleepUntil.
	Start(n int)
	Done()
}

// wallClock is the machine's clock.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) WithDeadline(ctx context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, d)
}

func (wallClock) Start(int) {}
func (wallClock) Done()     {}

// SleepUntil waits until t, false if ctx ends first.
func (wallClock) SleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// do sends one request. It does not use the run's context, so that a
// request in flight at the end completes and is counted.
func do(client *http.Client, clk clock, cfg Config, u *User) (code int, wait, latency time.Duration, err error) {
	req, err := http.NewRequest(http.MethodGet, cfg.URL+cfg.Path, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	req.Header.Set("X-Remote-User", u.Name)
	for _, g := range u.Groups {
		req.Header.Add("X-Remote-Group", g)
	}
	t0 := clk.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	latency = clk.Now().Sub(t0)
	wait = max(latency-cfg.Work, 0)
	if s := resp.Header.Get(HeaderWait); s != "" {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			wait = time.Duration(f * float64(time.Second))
		}
	}
	return resp.StatusCode, wait, latency, nil
}
