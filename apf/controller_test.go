package apf

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

// testConfig: one queuing level "work" (shares 10, 4 queues, hand 2, QLL 2)
// for user-* in group "tenants", distinguished by user.
const testConfigYAML = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: work}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse:
      type: Queue
      queuing: {queues: 4, handSize: 2, queueLengthLimit: 2}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tenants}
spec:
  priorityLevelConfiguration: {name: work}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: tenants}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`

func mustDecode(t testing.TB, y string) *flowschema.Config {
	t.Helper()
	cfg, err := flowschema.Decode([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func tenant(name string) *Request {
	return &Request{
		User: User{Name: name, Groups: []string{"tenants", "system:authenticated"}},
		Info: RequestInfo{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Resource: "pods", Namespace: "ns", Name: "p", Path: "/api/v1/namespaces/ns/pods/p"},
	}
}

func newTestController(t testing.TB, serverCL int) (*Controller, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	c, err := New(mustDecode(t, testConfigYAML), Options{ServerConcurrencyLimit: serverCL, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, clk
}

func levelLimits(c *Controller, name string) Limits {
	for _, d := range c.Dump() {
		if d.Name == name {
			return d.Limits
		}
	}
	return Limits{}
}

func TestClassifyDefaults(t *testing.T) {
	c, err := New(nil, Options{ServerConcurrencyLimit: 600})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cases := []struct {
		user   User
		path   string
		fs, pl string
		dist   string
	}{
		{User{"alice", []string{"system:authenticated"}}, "/api/v1/namespaces/a/pods", "global-default", "global-default", "alice"},
		{User{"root", []string{"system:masters", "system:authenticated"}}, "/api/v1/pods", "exempt", "exempt", ""},
		{User{"system:anonymous", []string{"system:unauthenticated"}}, "/healthz", "probes", "exempt", ""},
		{User{"nobody", nil}, "/api/v1/pods", "catch-all", "catch-all", ""},
	}
	for _, tc := range cases {
		ri, _ := ParseRequestInfo(mustRequest("GET", tc.path))
		cl := c.Classify(&Request{User: tc.user, Info: ri})
		if cl.FlowSchema != tc.fs || cl.PriorityLevel != tc.pl || cl.Distinguisher != tc.dist {
			t.Errorf("Classify(%v %s) = %s/%s/%q, want %s/%s/%q", tc.user, tc.path, cl.FlowSchema, cl.PriorityLevel, cl.Distinguisher, tc.fs, tc.pl, tc.dist)
		}
		if cl.FlowSchemaUID == "" || cl.PriorityLevelUID == "" || cl.FlowSchemaUID == cl.PriorityLevelUID {
			t.Errorf("Classify(%v) UIDs = %q, %q; want two distinct", tc.user, cl.FlowSchemaUID, cl.PriorityLevelUID)
		}
	}
	// The default limits at 600 seats, as upstream computes them.
	want := map[string]int{"exempt": 0, "catch-all": 13, "global-default": 49, "leader-election": 25, "node-high": 98, "system": 74, "workload-high": 98, "workload-low": 245}
	for name, n := range want {
		if got := levelLimits(c, name).Nominal; got != n {
			t.Errorf("nominal limit of %s = %d, want %d", name, got, n)
		}
	}
}

func TestWaitQueueFullAndDispatch(t *testing.T) {
	// Server 4 seats: catch-all 5 shares, work 10 shares, exempt 0:
	// work's nominal = ceil(4·10/15) = 3.
	c, _ := newTestController(t, 4)
	if got := levelLimits(c, "work").Current; got != 3 {
		t.Fatalf("current limit of work = %d, want 3", got)
	}
	ctx := context.Background()
	var running []Ticket
	for range 3 {
		tk, err := c.Wait(ctx, tenant("a"), nil)
		if err != nil {
			t.Fatalf("Wait with a free seat: %v", err)
		}
		running = append(running, tk)
	}
	// Hand of 2 queues × limit 2: user b can queue 4 requests; the 5th is
	// rejected with queue-full.
	type result struct {
		t   Ticket
		err error
	}
	results := make(chan result, 8)
	for range 4 {
		go func() {
			tk, err := c.Wait(ctx, tenant("b"), nil)
			results <- result{tk, err}
		}()
	}
	waitFor(t, func() bool { return c.Dump()[levelIndex(c, "work")].QueueSet.Waiting == 4 })
	_, err := c.Wait(ctx, tenant("b"), nil)
	var rej *RejectedError
	if !errors.As(err, &rej) || rej.Reason != fairqueue.ReasonQueueFull || rej.RetryAfter != 1 {
		t.Fatalf("5th waiting request: err = %v, want queue-full with Retry-After 1", err)
	}
	if rej.Classification.FlowSchema != "tenants" || rej.Classification.Distinguisher != "b" {
		t.Errorf("rejection classification = %+v", rej.Classification)
	}
	for _, tk := range running {
		tk.Finish()
	}
	for range 3 {
		r := recv(t, results, "result")
		if r.err != nil {
			t.Fatalf("queued request: %v", r.err)
		}
		if r.t.Queue() < 0 {
			t.Errorf("queued request's Queue() = -1")
		}
		r.t.Finish()
	}
	r := recv(t, results, "result")
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.t.Finish()
	d := c.Dump()[levelIndex(c, "work")].QueueSet
	if d.Waiting != 0 || d.Executing != 0 || d.Dispatched != 7 || d.Rejected != 1 {
		t.Errorf("work level after all finished: %+v", d)
	}
}

func TestWaitTimeOutAndClose(t *testing.T) {
	c, _ := newTestController(t, 4)
	for range 3 {
		if _, err := c.Wait(context.Background(), tenant("a"), nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Wait(ctx, tenant("b"), nil)
	var rej *RejectedError
	if !errors.As(err, &rej) || rej.Reason != fairqueue.ReasonTimeOut || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past its deadline: %v, want time-out wrapping DeadlineExceeded", err)
	}
	done, dcancel := context.WithCancel(context.Background())
	dcancel()
	if _, err := c.Wait(done, tenant("b"), nil); !errors.As(err, &rej) || rej.Reason != fairqueue.ReasonTimeOut {
		t.Fatalf("Wait with an ended context: %v, want time-out", err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Wait(context.Background(), tenant("c"), nil)
		errc <- err
	}()
	waitFor(t, func() bool { return c.Dump()[levelIndex(c, "work")].QueueSet.Waiting == 1 })
	c.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("waiter at Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not released by Close")
	}
	if _, err := c.Wait(context.Background(), tenant("a"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after Close: %v, want ErrClosed", err)
	}
}

func TestReconfigureQuiescing(t *testing.T) {
	c, _ := newTestController(t, 40)
	tk, err := c.Wait(context.Background(), tenant("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Drop the level and its FlowSchema: requests now go to global-default
	// (no: catch-all, as the default config is not loaded), and "work"
	// quiesces while its request runs.
	if err := c.Reconfigure(&flowschema.Config{}); err != nil {
		t.Fatal(err)
	}
	if got := c.Classify(tenant("a")).PriorityLevel; got != "catch-all" {
		t.Errorf("after removal, tenants go to %q, want catch-all", got)
	}
	var b strings.Builder
	if err := WritePriorityLevels(&b, c.Dump()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "work,") || !regexpLine(b.String(), `work,\s+0,\s+false,\s+true,`) {
		t.Errorf("dump_priority_levels does not show work quiescing:\n%s", b.String())
	}
	tk.Finish()
	if i := levelIndex(c, "work"); i >= 0 {
		t.Errorf("work still present after its last request finished: %+v", c.Dump()[i])
	}
	// Re-adding it starts afresh.
	if err := c.Reconfigure(mustDecode(t, testConfigYAML)); err != nil {
		t.Fatal(err)
	}
	if got := c.Classify(tenant("a")).PriorityLevel; got != "work" {
		t.Errorf("after re-adding, tenants go to %q, want work", got)
	}
}

func TestFinalSeatsReleasedByTimer(t *testing.T) {
	c, clk := newTestController(t, 4)
	work := func(*Classification, uint64) fairqueue.WorkEstimate {
		return fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: 10 * time.Millisecond}
	}
	tk, err := c.Wait(context.Background(), tenant("a"), work)
	if err != nil {
		t.Fatal(err)
	}
	tk.Finish()
	lv := c.Dump()[levelIndex(c, "work")].QueueSet
	if lv.SeatsInUse != 3 {
		t.Fatalf("seats in use during the final phase = %d, want 3", lv.SeatsInUse)
	}
	clk.Step(10 * time.Millisecond)
	if got := c.Dump()[levelIndex(c, "work")].QueueSet.SeatsInUse; got != 0 {
		t.Errorf("seats in use after the final phase = %d, want 0", got)
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New(nil, Options{ServerConcurrencyLimit: 0, QueueSet: fairqueue.Config{ServiceDuration: -1}})
	if err == nil || !strings.Contains(err.Error(), "ServerConcurrencyLimit=0") || !strings.Contains(err.Error(), "ServiceDuration=-1ns") {
		t.Errorf("New(bad options) error = %v", err)
	}
}

// Tickets are reused after Finish: a finished Ticket panics on any use,
// and a stale copy cannot finish the request that reuses its state.
func TestTicketAfterFinish(t *testing.T) {
	c, _ := newTestController(t, 4)
	tk, err := c.Wait(context.Background(), tenant("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Classification().Distinguisher; got != "a" {
		t.Fatalf("Classification().Distinguisher = %q, want a", got)
	}
	tk.Finish()
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s on a finished Ticket did not panic", name)
			}
		}()
		f()
	}
	mustPanic("Finish", tk.Finish)
	mustPanic("Classification", func() { tk.Classification() })
	mustPanic("Queue", func() { tk.Queue() })
	mustPanic("WaitTime", func() { tk.WaitTime() })
	mustPanic("Work", func() { tk.Work() })
	mustPanic("Finish of the zero Ticket", Ticket{}.Finish)

	// Whether or not the pool hands the same state back, the new request
	// is intact after the stale handle's misuse.
	tk2, err := c.Wait(context.Background(), tenant("b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustPanic("Finish (stale, after reuse)", tk.Finish)
	if got := tk2.Classification().Distinguisher; got != "b" {
		t.Errorf("new ticket's Distinguisher = %q, want b", got)
	}
	if got := c.Dump()[levelIndex(c, "work")].QueueSet.Executing; got != 1 {
		t.Errorf("executing = %d, want 1 (the stale Finish must not end the new request)", got)
	}
	tk2.Finish()
	if got := c.Dump()[levelIndex(c, "work")].QueueSet.Executing; got != 0 {
		t.Errorf("executing after Finish = %d, want 0", got)
	}
}
