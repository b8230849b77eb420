package apfmetrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

const cfgYAML = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: work}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse:
      type: Queue
      queuing: {queues: 1, handSize: 1, queueLengthLimit: 1}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tenants}
spec:
  priorityLevelConfiguration: {name: work}
  matchingPrecedence: 500
  rules:
  - subjects: [{kind: Group, group: {name: tenants}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

func req(name string) *apf.Request {
	return &apf.Request{User: apf.User{Name: name, Groups: []string{"tenants", "system:authenticated"}},
		Info: apf.RequestInfo{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Resource: "pods", Namespace: "a", Name: "p"}}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg); err == nil {
		t.Error("registering twice: nil error")
	}
	cfg, err := flowschema.Decode([]byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	// 4 seats: work gets ceil(4·10/15) = 3, catch-all 2.
	c, err := apf.New(cfg, apf.Options{ServerConcurrencyLimit: 4, Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	var running []apf.Ticket
	for range 3 {
		tk, err := c.Wait(ctx, req("a"), nil)
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, tk)
	}
	// One waits (queue length 1), the next is rejected with queue-full.
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Wait(wctx, req("b"), nil)
		errc <- err
	}()
	inqueue := m.inqueueRequests.WithLabelValues("work", "tenants")
	waitFor(t, func() bool { return testutil.ToFloat64(inqueue) == 1 })
	var rej *apf.RejectedError
	if _, err := c.Wait(ctx, req("c"), nil); !errors.As(err, &rej) || rej.Reason != fairqueue.ReasonQueueFull {
		t.Fatalf("third waiter: %v, want queue-full", err)
	}
	cancel()
	if err := <-errc; !errors.As(err, &rej) || rej.Reason != fairqueue.ReasonTimeOut {
		t.Fatalf("cancelled waiter: %v, want time-out", err)
	}
	checks := []struct {
		c    prometheus.Collector
		want float64
	}{
		{m.dispatched.WithLabelValues("work", "tenants"), 3},
		{m.executingRequests.WithLabelValues("work", "tenants"), 3},
		{m.executingSeats.WithLabelValues("work", "tenants"), 3},
		{inqueue, 0},
		{m.inqueueSeats.WithLabelValues("work", "tenants"), 0},
		{m.rejected.WithLabelValues("work", "tenants", "queue-full"), 1},
		{m.rejected.WithLabelValues("work", "tenants", "time-out"), 1},
	}
	for i, ch := range checks {
		if got := testutil.ToFloat64(ch.c); got != ch.want {
			t.Errorf("check %d: got %v, want %v", i, got, ch.want)
		}
	}
	for _, tk := range running {
		tk.Finish()
	}
	if got := testutil.ToFloat64(m.executingSeats.WithLabelValues("work", "tenants")); got != 0 {
		t.Errorf("executing seats after all finished = %v, want 0", got)
	}
	// request_wait_duration_seconds: 3 dispatched (true), the queue-full
	// rejection (false), the time-out (true, as upstream labels it).
	if n := testutil.CollectAndCount(m.waitSeconds); n != 2 {
		t.Errorf("request_wait_duration_seconds series = %d, want 2 (execute true and false)", n)
	}
	want := `
# HELP apiserver_flowcontrol_nominal_limit_seats Nominal number of execution seats configured for each priority level
# TYPE apiserver_flowcontrol_nominal_limit_seats gauge
apiserver_flowcontrol_nominal_limit_seats{priority_level="catch-all"} 2
apiserver_flowcontrol_nominal_limit_seats{priority_level="exempt"} 0
apiserver_flowcontrol_nominal_limit_seats{priority_level="work"} 3
# HELP apiserver_flowcontrol_rejected_requests_total Number of requests rejected by API Priority and Fairness subsystem
# TYPE apiserver_flowcontrol_rejected_requests_total counter
apiserver_flowcontrol_rejected_requests_total{flow_schema="tenants",priority_level="work",reason="queue-full"} 1
apiserver_flowcontrol_rejected_requests_total{flow_schema="tenants",priority_level="work",reason="time-out"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"apiserver_flowcontrol_nominal_limit_seats", "apiserver_flowcontrol_rejected_requests_total"); err != nil {
		t.Error(err)
	}
	// Every metric listed in the package doc is exported.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"rejected_requests_total", "dispatched_requests_total", "current_inqueue_requests",
		"current_executing_requests", "current_executing_seats", "request_wait_duration_seconds", "nominal_limit_seats",
		"current_inqueue_seats", "request_queue_length_after_enqueue", "request_execution_seconds", "work_estimated_seats",
		"lower_limit_seats", "upper_limit_seats", "current_limit_seats", "target_seats", "seat_fair_frac",
		"demand_seats_high_watermark", "demand_seats_average", "demand_seats_stdev", "demand_seats_smoothed",
		"dispatch_r", "latest_s", "next_s_bounds", "next_discounted_s_bounds", "priority_level_seat_utilization",
		"priority_level_request_utilization", "read_vs_write_current_requests", "demand_seats"} {
		if !names["apiserver_flowcontrol_"+n] {
			t.Errorf("apiserver_flowcontrol_%s not exported", n)
		}
	}
}
