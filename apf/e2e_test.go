package apf_test

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/loadtest"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/shufflesharding"
)

var e2eDuration = flag.Duration("apf.e2e", 2500*time.Millisecond, "length of each end-to-end load run")

// tenantsYAML: one queuing level of 64 queues of length 128 for the group
// "tenants", a flow per user. With a server limit of 6 seats it gets 4
// (catch-all 2).
//
// The hand size is 1 so that every flow has exactly one queue: APF makes
// queues, not flows, compete fairly, and with a larger hand a flow with
// many requests in flight spreads over its whole hand and takes a share
// per queue (upstream's design; BENCHMARKS.md shows the hand-6 numbers).
// The five users' queues (FlowHash mod 64) are distinct: 53, 39, 31, 3
// and 52, which TestEndToEndFairness checks.
const tenantsYAML = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tenants}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse:
      type: Queue
      queuing: {queues: 64, handSize: 1, queueLengthLimit: 128}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tenants}
spec:
  priorityLevelConfiguration: {name: tenants}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: tenants}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

const (
	e2eSeats = 4
	e2eWork  = 25 * time.Millisecond
)

// work holds the seat for e2eWork and reports the admission wait.
func work(w http.ResponseWriter, r *http.Request) {
	if t := apf.TicketFromContext(r.Context()); t != nil {
		w.Header().Set(loadtest.HeaderWait, strconv.FormatFloat(t.Wait().Seconds(), 'f', -1, 64))
	}
	time.Sleep(e2eWork)
	w.WriteHeader(http.StatusOK)
}

// fifo is the control: at most n requests execute, the rest wait in one
// first-come first-served line, whoever sent them.
func fifo(n int, next http.Handler) http.Handler {
	sem := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		select {
		case sem <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-sem }()
		w.Header().Set(loadtest.HeaderWait, strconv.FormatFloat(time.Since(t0).Seconds(), 'f', -1, 64))
		next.ServeHTTP(w, r)
	})
}

func serve(t *testing.T, h http.Handler) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("server shutdown: %v", err)
		}
		<-done
	}
}

// One noisy user with 120 requests in flight (within its queue length of
// 128, so that it does not spin on 429s), four quiet users with 16 each,
// enough to keep their queues busy on a loaded machine under -race:
// every user wants more than the fair share (4 seats / 5 flows = 0.8).
var users = []loadtest.User{
	{Name: "noisy", Groups: []string{"tenants"}, Concurrency: 120},
	{Name: "quiet-1", Groups: []string{"tenants"}, Concurrency: 16},
	{Name: "quiet-2", Groups: []string{"tenants"}, Concurrency: 16},
	{Name: "quiet-3", Groups: []string{"tenants"}, Concurrency: 16},
	{Name: "quiet-4", Groups: []string{"tenants"}, Concurrency: 16},
}

func run(t *testing.T, h http.Handler) loadtest.Report {
	t.Helper()
	url, stop := serve(t, h)
	defer stop()
	rep, err := loadtest.Run(context.Background(), loadtest.Config{URL: url, Users: users, Duration: *e2eDuration, Work: e2eWork})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// shareOfFair returns the requests a user got served within the window
// over its fair share of all those (total / number of users): every user
// wants more than an equal share.
func shareOfFair(rep *loadtest.Report, name string) float64 {
	total := 0
	for _, u := range rep.Users {
		total += u.Windowed
	}
	return float64(rep.User(name).Windowed) / (float64(total) / float64(len(rep.Users)))
}

func TestEndToEndFairness(t *testing.T) {
	defer goleak.VerifyNone(t)
	cfg, err := flowschema.Decode([]byte(tenantsYAML))
	if err != nil {
		t.Fatal(err)
	}
	c, err := apf.New(cfg, apf.Options{ServerConcurrencyLimit: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h, err := c.Handler(http.HandlerFunc(work), apf.HandlerOptions{User: apf.RequestHeaderUser})
	if err != nil {
		t.Fatal(err)
	}

	seen := map[uint64]string{}
	for _, u := range users {
		q := shufflesharding.FlowHash("tenants", u.Name) % 64
		if other, dup := seen[q]; dup {
			t.Fatalf("users %s and %s share queue %d; pick other names", u.Name, other, q)
		}
		seen[q] = u.Name
	}

	// The APF run is measured up to three times: on a shared 2-core
	// machine under -race, a client starved of CPU for a few hundred
	// milliseconds lets its queue run dry and loses turns it never asked
	// for. Every attempt must still serve or reject every request; the
	// fairness and wait bounds must hold in one of them.
	var withAPF loadtest.Report
	var unfair []string
	for attempt := 1; attempt <= 3; attempt++ {
		withAPF = run(t, h)
		logReport(t, fmt.Sprintf("apf (attempt %d)", attempt), &withAPF)
		if unfair = fairnessProblems(&withAPF); len(unfair) == 0 {
			break
		}
		t.Logf("attempt %d: %v", attempt, unfair)
	}
	for _, p := range unfair {
		t.Error(p)
	}
	without := run(t, fifo(e2eSeats, http.HandlerFunc(work)))
	logReport(t, "fifo", &without)
	for _, u := range users[1:] {
		if got := shareOfFair(&without, u.Name); got > 0.6 {
			t.Errorf("without APF %s still got %.2f of its fair share; the control does not show the collapse", u.Name, got)
		}
	}
	for _, d := range c.Dump() {
		if d.QueueSet.Waiting != 0 || d.QueueSet.Executing != 0 || d.QueueSet.SeatsInUse != 0 {
			t.Errorf("level %s not drained after the run: %+v", d.Name, d.QueueSet)
		}
	}
}

// logReport logs a run and checks that every request was served or 429.
func logReport(t *testing.T, name string, rep *loadtest.Report) {
	t.Helper()
	var b logWriter
	_ = rep.Write(&b)
	t.Logf("%s:\n%s", name, b)
	for _, u := range rep.Users {
		if u.Errors != 0 || u.Served+u.Rejected != u.Sent {
			t.Errorf("%s: %s sent %d requests, %d served, %d answered 429, %d failed; want every one served or 429",
				name, u.Name, u.Sent, u.Served, u.Rejected, u.Errors)
		}
	}
}

// fairnessProblems checks the quiet users of an APF run: at least 0.95 of
// the fair share of throughput, and a p99 wait within twice the
// Little's-law estimate (c requests in flight at a fair share of s seats
// wait about (c/s − 1) × work; the bound is 2 × c/s × work).
func fairnessProblems(rep *loadtest.Report) []string {
	var out []string
	fairSeats := float64(e2eSeats) / float64(len(users))
	for _, u := range users[1:] {
		if got := shareOfFair(rep, u.Name); got < 0.95 {
			out = append(out, fmt.Sprintf("with APF %s got %.2f of its fair share of throughput, want ≥ 0.95", u.Name, got))
		}
		bound := time.Duration(2 * float64(u.Concurrency) / fairSeats * float64(e2eWork))
		if p99 := rep.User(u.Name).Percentile(99); p99 > bound {
			out = append(out, fmt.Sprintf("with APF %s waited %v at p99, want ≤ %v", u.Name, p99, bound))
		}
	}
	return out
}

type logWriter []byte

func (w *logWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }
