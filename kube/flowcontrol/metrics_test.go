package flowcontrol

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/server/httplog"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/fairqueue"
)

// stepClock is a fairqueue.Clock that moves only when told; its timers
// never fire (the test's requests have no final phase).
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return true }

func (c *stepClock) AfterFunc(time.Duration, func()) fairqueue.Timer { return stoppedTimer{} }

var registerMetrics sync.Once

// flowMetrics are upstream's per-request series of one priority level and
// FlowSchema: the histograms' count and sum, the counters' and gauges'
// values.
type flowMetrics struct {
	WaitCount                  uint64
	WaitSum                    float64
	ExecCount                  uint64
	ExecSum                    float64
	Dispatched                 float64
	Executing, InQueue, Seats  float64
	QueueLengthSamplesOfLevels uint64
}

func gatherFlowMetrics(t *testing.T, pl, fs string) flowMetrics {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var m flowMetrics
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["priority_level"] != pl || labels["flow_schema"] != fs {
				continue
			}
			switch mf.GetName() {
			case "apiserver_flowcontrol_request_wait_duration_seconds":
				if labels["execute"] == "true" {
					m.WaitCount += s.GetHistogram().GetSampleCount()
					m.WaitSum += s.GetHistogram().GetSampleSum()
				}
			case "apiserver_flowcontrol_request_execution_seconds":
				m.ExecCount += s.GetHistogram().GetSampleCount()
				m.ExecSum += s.GetHistogram().GetSampleSum()
			case "apiserver_flowcontrol_dispatched_requests_total":
				m.Dispatched += s.GetCounter().GetValue()
			case "apiserver_flowcontrol_current_executing_requests":
				m.Executing += s.GetGauge().GetValue()
			case "apiserver_flowcontrol_current_inqueue_requests":
				m.InQueue += s.GetGauge().GetValue()
			case "apiserver_flowcontrol_current_executing_seats":
				m.Seats += s.GetGauge().GetValue()
			case "apiserver_flowcontrol_request_queue_length_after_enqueue":
				m.QueueLengthSamplesOfLevels += s.GetHistogram().GetSampleCount()
			}
		}
	}
	return m
}

// TestHandleWritesUpstreamMetrics runs requests through a queuing level
// on a stepping clock and checks upstream's metrics: the wait and
// execution durations Handle reports are the clock's, though Handle reads
// no clock itself (they come from apf's readings at arrival, dispatch and
// finish).
func TestHandleWritesUpstreamMetrics(t *testing.T) {
	registerMetrics.Do(metrics.Register)
	metrics.Reset()
	clk := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	e := startEnvWith(t, Options{Clock: clk}, testObjects(), "tenants")
	rd := digest("alice", "tenants")
	note := func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string) {}
	estimate := func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} }
	queued := make(chan bool, 16)
	queueNote := func(in bool) { queued <- in }

	// A: dispatched at once, executes for 3 s.
	e.c.Handle(context.Background(), rd, note, estimate, queueNote, func() { clk.Advance(3 * time.Second) })
	// B and C take the level's two seats; D waits 2 s in the queue, is
	// dispatched when B finishes and executes for no time; C finishes
	// after 2 s too.
	type running struct{ release, done chan struct{} }
	start := func() running {
		r := running{make(chan struct{}), make(chan struct{})}
		entered := make(chan struct{})
		go func() {
			defer close(r.done)
			e.c.Handle(context.Background(), rd, note, estimate, queueNote, func() { close(entered); <-r.release })
		}()
		waitFor(t, entered, "a request to execute")
		return r
	}
	b, c := start(), start()
	dDone := make(chan struct{})
	go func() {
		defer close(dDone)
		e.c.Handle(context.Background(), rd, note, estimate, queueNote, func() {})
	}()
	// Every request's queue notes are true then false; D's true is the
	// seventh note (after A's, B's and C's pairs).
	deadline := time.After(20 * time.Second)
	for n := 0; n < 7; n++ {
		select {
		case <-queued:
		case <-deadline:
			t.Fatalf("timed out after 20s waiting for queue note %d", n+1)
		}
	}
	clk.Advance(2 * time.Second)
	close(b.release)
	waitFor(t, b.done, "B to return")
	waitFor(t, dDone, "D to return")
	close(c.release)
	waitFor(t, c.done, "C to return")

	got := gatherFlowMetrics(t, "tenants", "tenants")
	want := flowMetrics{
		WaitCount: 4, WaitSum: 2, // D's 2 s
		ExecCount: 4, ExecSum: 3 + 2 + 0 + 2,
		Dispatched:                 4,
		QueueLengthSamplesOfLevels: 4,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("upstream's metrics of tenants/tenants (-want +got):\n%s", diff)
	}
}

// logCapture collects klog's structured log lines.
type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCapture) write(prefix, args string) {
	l.mu.Lock()
	l.lines = append(l.lines, args)
	l.mu.Unlock()
}

func (l *logCapture) find(sub string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return s
		}
	}
	return ""
}

// TestHandleAddsExecutionTimeToHTTPLog: as upstream's Handle, ours adds
// apf_execution_time to the request's line of httplog.WithLogging (which
// logs at klog verbosity 3), with the clock's execution time.
func TestHandleAddsExecutionTimeToHTTPLog(t *testing.T) {
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	if err := flags.Set("v", "3"); err != nil {
		t.Fatal(err)
	}
	logs := &logCapture{}
	klog.SetLogger(funcr.New(logs.write, funcr.Options{Verbosity: 10}))
	// Registered before the environment's cleanup, so run after it: klog's
	// logger must not change while the informers log.
	t.Cleanup(func() {
		klog.ClearLogger()
		_ = flags.Set("v", "0")
	})

	clk := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	e := startEnvWith(t, Options{Clock: clk}, testObjects(), "tenants")
	h := httplog.WithLogging(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.c.Handle(r.Context(), digest("alice", "tenants"),
			func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string) {},
			func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} },
			func(bool) {}, func() { clk.Advance(1500 * time.Millisecond) })
	}), httplog.DefaultStacktracePred)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods/p", nil))
	line := logs.find(`"apf_execution_time"`)
	if line == "" {
		t.Fatalf("no HTTP log line carries apf_execution_time; the request's line: %q", logs.find(`"msg"="HTTP"`))
	}
	if want := `"apf_execution_time"="1.5s"`; !strings.Contains(line, want) {
		t.Errorf("HTTP log line %q lacks %s", line, want)
	}
}
