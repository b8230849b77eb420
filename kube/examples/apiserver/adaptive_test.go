package main

// The measurement harness of issue 26 on the real example server: it
// builds this command, runs it as its own process on 127.0.0.1 for every
// configuration, drives it with internal/loadtest and reads the total from the
// server's /metrics every 100 ms. Off unless asked for:
//
//	cd kube && go test -run TestAdaptiveRealServer -v -timeout 60m ./examples/apiserver/ \
//		-apiserver.adaptive [-apiserver.slots 4,8,16] [-apiserver.runs 3] [-apiserver.duration 20s] \
//		[-apiserver.part sweep,overload] [-apiserver.statics 8,12,16,24,48] [-apiserver.best T] \
//		[-apiserver.warmup 2s]
//
// sweep: per backend of N slots (capacity halving at half the duration),
// four paced users offering twice the initial capacity, client timeout 1 s
// (goodput: 2xx within it, per second); every static total of the sweep
// and auto, -apiserver.runs times each.
// overload: one closed-loop noisy user keeping 10·N in flight and four
// quiet users paced at 10/s each; auto, the quiet users alone on auto
// (unloaded), and a static total 4× the sweep's best. The quiet users'
// p99 is reported over the whole run and over the requests sent after
// -apiserver.warmup (the adaptive total's start left out).

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fairslice/fairslice/internal/loadtest"
)

var (
	adaptiveOn       = flag.Bool("apiserver.adaptive", false, "run the adaptive-total measurement against the real example server")
	adaptiveSlots    = flag.String("apiserver.slots", "4,8,16", "backend sizes to measure")
	adaptiveRuns     = flag.Int("apiserver.runs", 3, "runs of every configuration")
	adaptiveDuration = flag.Duration("apiserver.duration", 20*time.Second, "length of one run (the capacity halves at half of it)")
	adaptivePart     = flag.String("apiserver.part", "sweep,overload", "parts to run")
	adaptiveStatics  = flag.String("apiserver.statics", "", "static totals to sweep, as multiples of N (default 8,12,16,24,48)")
	adaptiveBest     = flag.Int("apiserver.best", 0, "overload without sweep: the best static total (the comparison runs 4× it)")
	adaptiveWarmup   = flag.Duration("apiserver.warmup", 2*time.Second, "overload: the start of a run left out of the quiet users' p99 after warmup")
)

const (
	benchWork    = 20 * time.Millisecond
	benchTimeout = time.Second
	// The loaded level: every authenticated user lands in global-default
	// in the bootstrap configuration.
	benchLevel = "global-default"
)

// sample is the server's state at one instant of a run.
type sample struct {
	at           time.Duration // since the server was ready
	total, limit int           // the total; the loaded level's current limit
}

// runResult is one run of the server under load.
type runResult struct {
	rep     loadtest.Report
	samples []sample
}

// runServer starts the built server with args, drives it with users for
// d, and returns the report and the samples of /metrics.
func runServer(t *testing.T, bin string, args []string, users []loadtest.User, d time.Duration) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--listen", "127.0.0.1:0", "--work", benchWork.String()}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var url string
	select {
	case url = <-addr:
	case <-time.After(20 * time.Second):
		t.Fatal("server not ready within 20 s")
	}
	ready := time.Now()

	var (
		mu      sync.Mutex
		samples []sample
	)
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		client := &http.Client{Timeout: time.Second}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if s, ok := scrape(client, url, time.Since(ready)); ok {
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	inflight := 0
	for _, u := range users {
		inflight += u.Concurrency
	}
	client := &http.Client{Timeout: benchTimeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: inflight, MaxConnsPerHost: inflight}}
	defer client.CloseIdleConnections()
	rep, err := loadtest.Run(ctx, loadtest.Config{URL: url, Users: users, Duration: d, Work: benchWork, Client: client, Warmup: min(*adaptiveWarmup, d/2)})
	close(stop)
	<-polled
	if err != nil {
		t.Fatal(err)
	}
	return runResult{rep: rep, samples: samples}
}

var (
	totalLine = regexp.MustCompile(`(?m)^` + TotalSeatsMetric + ` (\S+)$`)
	limitLine = regexp.MustCompile(`(?m)^apiserver_flowcontrol_current_limit_seats\{priority_level="` + benchLevel + `"\} (\S+)$`)
)

// scrape reads the total and the loaded level's current limit.
func scrape(client *http.Client, url string, at time.Duration) (sample, bool) {
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		return sample{}, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return sample{}, false
	}
	tm, lm := totalLine.FindSubmatch(b), limitLine.FindSubmatch(b)
	if tm == nil || lm == nil {
		return sample{}, false
	}
	total, err1 := strconv.ParseFloat(string(tm[1]), 64)
	limit, err2 := strconv.ParseFloat(string(lm[1]), 64)
	if err1 != nil || err2 != nil {
		return sample{}, false
	}
	return sample{at: at, total: int(total), limit: int(limit)}, true
}

// goodput is the 2xx responses within the window, per second, of all
// users (the client's timeout makes a late one an error).
func goodput(rep *loadtest.Report) float64 {
	n := 0
	for _, u := range rep.Users {
		n += u.Windowed
	}
	return float64(n) / rep.Window.Seconds()
}

// settled returns when the loaded level's limit entered [lo, hi] to stay
// there over [from, to), measured from from; false if it never did. The
// samples before a gap longer than a second do not count as staying.
func settled(samples []sample, from, to time.Duration, lo, hi int) (time.Duration, bool) {
	var in []sample
	for _, s := range samples {
		if s.at >= from && s.at < to {
			in = append(in, s)
		}
	}
	if len(in) == 0 {
		return 0, false
	}
	i := len(in)
	for i > 0 && in[i-1].limit >= lo && in[i-1].limit <= hi && (i == len(in) || in[i].at-in[i-1].at < time.Second) {
		i--
	}
	if i == len(in) {
		return 0, false
	}
	return in[i].at - from, true
}

// span formats the range of xs.
func span(xs []float64, format string) string {
	if len(xs) == 0 {
		return "–"
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if lo == hi {
		return fmt.Sprintf(format, lo)
	}
	return fmt.Sprintf(format+"–"+format, lo, hi)
}

func parseInts(t *testing.T, s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out = append(out, n)
	}
	return out
}

func buildServer(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "apiserver")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestAdaptiveRealServer measures issue 26's "done when" on the real
// example server. It reports; it asserts only that every run served
// something, since the bars are what is being measured (BENCHMARKS.md,
// "apf: the adaptive total against a backend of limited capacity").
func TestAdaptiveRealServer(t *testing.T) {
	if !*adaptiveOn {
		t.Skip("measurement: run with -apiserver.adaptive")
	}
	bin := buildServer(t)
	d := *adaptiveDuration
	parts := *adaptivePart
	statics := []int{8, 12, 16, 24, 48}
	if *adaptiveStatics != "" {
		statics = parseInts(t, *adaptiveStatics)
	}
	for _, n := range parseInts(t, *adaptiveSlots) {
		best := *adaptiveBest
		if strings.Contains(parts, "sweep") {
			best = sweep(t, bin, n, statics, d)
		}
		if strings.Contains(parts, "overload") {
			overload(t, bin, n, best, d)
		}
	}
}

// sweep runs every static total and auto on a backend of n slots halving
// at d/2, and returns the static total of the best mean goodput.
func sweep(t *testing.T, bin string, n int, statics []int, d time.Duration) int {
	rate := 2 * float64(n) / benchWork.Seconds() / 4
	conc := int(math.Ceil(rate * benchTimeout.Seconds()))
	var users []loadtest.User
	for i := 1; i <= 4; i++ {
		users = append(users, loadtest.User{Name: fmt.Sprintf("user-%d", i), Concurrency: conc, Rate: rate})
	}
	half := d / 2
	backend := []string{"--backend-slots", strconv.Itoa(n), "--backend-slots-at", fmt.Sprintf("%v=%d", half, max(n/2, 1))}
	type row struct {
		name          string
		good, p99     []float64
		start, halved []float64
		never         int
	}
	var rows []row
	bestMean, best := -1.0, 0
	for _, sc := range append(slices.Clone(statics), 0) {
		name := "auto"
		if sc > 0 {
			sc *= n
			name = strconv.Itoa(sc)
		}
		r := row{name: name}
		for run := range *adaptiveRuns {
			res := runServer(t, bin, append(slices.Clone(backend), "--server-concurrency", name), users, d)
			g := goodput(&res.rep)
			var lat []time.Duration
			for _, u := range res.rep.Users {
				lat = append(lat, u.Latencies...)
			}
			slices.Sort(lat)
			p99 := (&loadtest.UserResult{Latencies: lat}).LatencyPercentile(99)
			r.good = append(r.good, g)
			r.p99 = append(r.p99, float64(p99)/float64(time.Millisecond))
			s1, ok1 := settled(res.samples, 0, half, n, n*3/2+1)
			s2, ok2 := settled(res.samples, half, d, max(n/2, 1), n*3/4+1)
			if ok1 {
				r.start = append(r.start, s1.Seconds())
			}
			if ok2 {
				r.halved = append(r.halved, s2.Seconds())
			}
			if !ok1 || !ok2 {
				r.never++
			}
			if name == "auto" {
				t.Logf("N=%d auto run %d: goodput %.1f/s, p99 %v, settled start %v (%v) halved %v (%v); trace (s:total/limit): %s",
					n, run+1, g, p99.Round(time.Millisecond), s1.Round(100*time.Millisecond), ok1, s2.Round(100*time.Millisecond), ok2, trace(res.samples))
			}
			served, rejected, errs := res.rep.Total()
			if served == 0 {
				t.Errorf("N=%d %s run %d: nothing served (rejected %d, errors %d)", n, name, run+1, rejected, errs)
			}
		}
		if sc > 0 {
			if m := mean(r.good); m > bestMean {
				bestMean, best = m, sc
			}
		}
		rows = append(rows, r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "backend %d slots halving to %d at %v, %d runs of %v, 4 users offering %.0f/s, timeout %v:\n",
		n, max(n/2, 1), half, *adaptiveRuns, d, 4*rate, benchTimeout)
	fmt.Fprintf(&b, "%-6s %-16s %-14s %-16s %-14s %-14s %s\n", "total", "goodput/s", "latency p99 ms", "goodput/best", "settle start s", "settle half s", "never settled")
	for _, r := range rows {
		var ratio []float64
		for _, g := range r.good {
			ratio = append(ratio, g/bestMean)
		}
		fmt.Fprintf(&b, "%-6s %-16s %-14s %-16s %-14s %-14s %d/%d\n", r.name, span(r.good, "%.1f"), span(r.p99, "%.0f"),
			span(ratio, "%.3f"), span(r.start, "%.1f"), span(r.halved, "%.1f"), r.never, len(r.good))
	}
	fmt.Fprintf(&b, "best static by mean goodput: %d (%.1f/s)\n", best, bestMean)
	t.Log("\n" + b.String())
	return best
}

// overload runs one noisy user at 10× the capacity of a backend of n
// slots beside quiet users: on auto, on auto without the noisy user, and
// on a static total 4× best (skipped when best is 0).
func overload(t *testing.T, bin string, n, best int, d time.Duration) {
	const quiet, quietRate = 4, 10.0
	var quietUsers []loadtest.User
	for i := 1; i <= quiet; i++ {
		quietUsers = append(quietUsers, loadtest.User{Name: fmt.Sprintf("quiet-%d", i), Concurrency: 4, Rate: quietRate})
	}
	loaded := append([]loadtest.User{{Name: "noisy", Concurrency: 10 * n}}, quietUsers...)
	capacity := float64(n) / benchWork.Seconds()
	fair := capacity - quiet*quietRate // quiet users ask for less than an equal split
	backend := []string{"--backend-slots", strconv.Itoa(n)}
	type cfg struct {
		name  string
		total string
		users []loadtest.User
	}
	cfgs := []cfg{{"auto, quiet users alone (unloaded)", "auto", quietUsers}, {"auto", "auto", loaded}}
	if best > 0 {
		cfgs = append(cfgs, cfg{fmt.Sprintf("static %d (4× best %d), quiet users alone", 4*best, best), strconv.Itoa(4 * best), quietUsers},
			cfg{fmt.Sprintf("static %d (4× best %d)", 4*best, best), strconv.Itoa(4 * best), loaded})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "backend %d slots (capacity %.0f/s), noisy user %d in flight, %d quiet users at %.0f/s, %d runs of %v; noisy fair share %.0f/s:\n",
		n, capacity, 10*n, quiet, quietRate, *adaptiveRuns, d, fair)
	fmt.Fprintf(&b, "%-40s %-14s %-16s %-14s %-16s %-14s %-12s %s\n", "config", "quiet p99 ms", "p99 warm ms", "quiet p50 ms", "quiet served/s", "noisy good/s", "noisy/fair", "total (end)")
	for _, c := range cfgs {
		var qp99, qwarm, qp50, qserved, ng, nf, tot []float64
		for range *adaptiveRuns {
			res := runServer(t, bin, append(slices.Clone(backend), "--server-concurrency", c.total), c.users, d)
			var lat, warm []time.Duration
			served := 0
			for _, u := range res.rep.Users {
				if strings.HasPrefix(u.Name, "quiet") {
					lat = append(lat, u.Latencies...)
					warm = append(warm, u.WarmLatencies...)
					served += u.Windowed
				}
			}
			slices.Sort(lat)
			slices.Sort(warm)
			q, qw := loadtest.UserResult{Latencies: lat}, loadtest.UserResult{Latencies: warm}
			qp99 = append(qp99, float64(q.LatencyPercentile(99))/float64(time.Millisecond))
			qwarm = append(qwarm, float64(qw.LatencyPercentile(99))/float64(time.Millisecond))
			qp50 = append(qp50, float64(q.LatencyPercentile(50))/float64(time.Millisecond))
			qserved = append(qserved, float64(served)/d.Seconds())
			if u := res.rep.User("noisy"); u != nil {
				g := float64(u.Windowed) / d.Seconds()
				ng, nf = append(ng, g), append(nf, g/fair)
			}
			if len(res.samples) > 0 {
				tot = append(tot, float64(res.samples[len(res.samples)-1].total))
			}
		}
		fmt.Fprintf(&b, "%-40s %-14s %-16s %-14s %-16s %-14s %-12s %s\n", c.name, span(qp99, "%.1f"), span(qwarm, "%.1f"), span(qp50, "%.1f"), span(qserved, "%.1f"),
			span(ng, "%.1f"), span(nf, "%.3f"), span(tot, "%.0f"))
	}
	t.Log("\n" + b.String())
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// trace is the samples at 0.5 s steps as s:total/limit.
func trace(samples []sample) string {
	var parts []string
	next := time.Duration(0)
	for _, s := range samples {
		if s.at >= next {
			parts = append(parts, fmt.Sprintf("%.1f:%d/%d", s.at.Seconds(), s.total, s.limit))
			next += 500 * time.Millisecond
		}
	}
	return strings.Join(parts, " ")
}
