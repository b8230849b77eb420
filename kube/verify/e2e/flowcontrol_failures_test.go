package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fairslice/fairslice/kube/flowcontrol"
	"github.com/fairslice/fairslice/kube/verify/internal/realapiserver"
)

// fcHookHeader asks fcHook for a behaviour: "panic", or "sleep=<duration>"
// (sleep that long or until the request's context ends, then serve).
const fcHookHeader = "X-Fairslice-E2e"

// fcHook is the test-only API handler wrapper of the failure tests: it
// sits where the API handler does, inside panic recovery, the timeout
// filter and flow control.
func fcHook(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch v := r.Header.Get(fcHookHeader); {
		case v == "panic":
			panic("e2e: a handler panics")
		case strings.HasPrefix(v, "sleep="):
			d, err := time.ParseDuration(strings.TrimPrefix(v, "sleep="))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// fcSide is one kube-apiserver with the hook, upstream's flow
// controller or fairslice's, and a one-seat level e2e-tight.
type fcSide struct {
	name string
	srv  *realapiserver.Server
}

func startFCSides(t *testing.T, ctx context.Context) []*fcSide {
	t.Helper()
	flags := []string{"--max-requests-inflight=20", "--max-mutating-requests-inflight=10"}
	sides := []*fcSide{
		{"upstream", realapiserver.Start(t, realapiserver.Options{Flags: flags, WrapAPIHandler: fcHook})},
		{"fairslice", realapiserver.Start(t, realapiserver.Options{Flags: flags, WrapAPIHandler: fcHook, FlowControl: flowcontrol.New})},
	}
	for _, s := range sides {
		// One seat: ceil(30 × 1 / (sum of the bootstrap shares + 1)).
		pl, fs := fcLevel("e2e-tight", 1, 64, 2, 4)
		api := s.srv.Client.FlowcontrolV1()
		if _, err := api.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		fs, err := api.FlowSchemas().Create(ctx, fs, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hc, host := fcClient(t, s.srv, "e2e-probe", []string{"e2e-tight", "system:authenticated"})
		fcEventually(t, s.name+": requests of group e2e-tight classified to FlowSchema e2e-tight", func() (bool, string) {
			resp, _, err := fcGet(ctx, hc, host, "/api/v1/namespaces/default")
			if err != nil {
				return false, err.Error()
			}
			got := resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID")
			return got == string(fs.UID), "FlowSchema UID " + got + ", want " + string(fs.UID)
		})
		fcEventually(t, s.name+": level e2e-tight has one seat", func() (bool, string) {
			v, ok := fcMetric(t, ctx, s.srv, `apiserver_flowcontrol_nominal_limit_seats{priority_level="e2e-tight"}`)
			return ok && v == 1, fmt.Sprintf("%v %v", v, ok)
		})
	}
	return sides
}

// fcOutcome is what a client saw of a request: the status code (0 for a
// transport error) and the time it took.
type fcOutcome struct {
	code    int
	err     string
	elapsed time.Duration
}

// fcDo sends GET path on the e2e-tight level as user, with the hook
// header hook ("" for none).
func fcDo(t *testing.T, ctx context.Context, srv *realapiserver.Server, user, path, hook string) fcOutcome {
	t.Helper()
	hc, host := fcClient(t, srv, user, []string{"e2e-tight", "system:authenticated"})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hook != "" {
		req.Header.Set(fcHookHeader, hook)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return fcOutcome{err: err.Error(), elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	_, _ = bufio.NewReader(resp.Body).WriteTo(discard{})
	return fcOutcome{code: resp.StatusCode, elapsed: time.Since(start)}
}

// fcOutcomeClass is an outcome without what differs between servers
// and connections: the status code, or the transport error without the
// URL and the HTTP/2 stream ID.
func fcOutcomeClass(o fcOutcome) string {
	if o.err == "" {
		return strconv.Itoa(o.code)
	}
	msg := o.err
	if i := strings.LastIndex(msg, "\": "); i >= 0 {
		msg = msg[i+3:]
	}
	return fcStreamID.ReplaceAllString(msg, "stream ID N")
}

var fcStreamID = regexp.MustCompile(`stream ID [0-9]+`)

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// fcMetric reads one series of srv's /metrics by its name and labels.
func fcMetric(t *testing.T, ctx context.Context, srv *realapiserver.Server, series string) (float64, bool) {
	t.Helper()
	_, body, err := fcGet(ctx, fcAdmin(t, srv), srv.Config.Host, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(body) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// fcSeatsFree waits until the level e2e-tight of srv executes nothing
// and queues nothing, by its gauges.
func fcSeatsFree(t *testing.T, ctx context.Context, s *fcSide) {
	t.Helper()
	fcEventually(t, s.name+": e2e-tight executing and queued nothing", func() (bool, string) {
		exec, _ := fcMetric(t, ctx, s.srv, `apiserver_flowcontrol_current_executing_seats{flow_schema="e2e-tight",priority_level="e2e-tight"}`)
		queued, _ := fcMetric(t, ctx, s.srv, `apiserver_flowcontrol_current_inqueue_requests{flow_schema="e2e-tight",priority_level="e2e-tight"}`)
		return exec == 0 && queued == 0, fmt.Sprintf("executing seats %v, queued %v", exec, queued)
	})
}

// TestFlowControlFailuresMatchUpstream runs kube-apiserver twice, with
// upstream's flow controller and with fairslice's, each with a one-seat
// level and a test hook in place of the API handler, and requires the
// same outcomes of long-running and failing requests from both (the
// filter chain is upstream's in both; the flow controller differs): a watch
// is initialised and then holds no seat (another request of the level is
// served while it is open; the level's executing-seats gauge is 0); a
// handler panic gets the same answer (the HTTP/2 stream is reset: the
// timeout filter re-raises the panic) and releases its seat (three
// panics in a row, then a request of the level is served within its own
// 5 s timeout); a request whose ?timeout= expires while it executes, and
// one whose ?timeout= expires while it waits in the level's queue behind
// a request holding the seat, answer the same status (504 for the one
// executing, after about its timeout; 429 for the waiting one, after
// about a quarter of its timeout, the filter's limit on queue waits), and
// leave the level with nothing executing or queued; the waiting one is
// counted as rejected for time-out by both.
func TestFlowControlFailuresMatchUpstream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sides := startFCSides(t, ctx)
	const getNS = "/api/v1/namespaces/default"

	t.Run("watch holds no seat once initialised", func(t *testing.T) {
		for _, s := range sides {
			cfg := rest.CopyConfig(s.srv.Config)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: "e2e-watcher", Groups: []string{"e2e-tight", "system:authenticated"}}
			wc, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			w, err := wc.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("%s: watch: %v", s.name, err)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "e2e-watched"}}
			if _, err := s.srv.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-w.ResultChan():
				if ev.Type != watch.Added {
					t.Errorf("%s: first watch event %s, want ADDED", s.name, ev.Type)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: no watch event within 30s", s.name)
			}
			if got := fcDo(t, ctx, s.srv, "e2e-after-watch", getNS+"?timeout=5s", ""); got.code != http.StatusOK {
				t.Errorf("%s: GET on the one-seat level while a watch is open = %+v, want 200", s.name, got)
			}
			fcSeatsFree(t, ctx, s)
			_, dump, err := fcGet(ctx, fcAdmin(t, s.srv), s.srv.Config.Host, "/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(dump, "e2e-watcher") {
				t.Errorf("%s: dump_requests lists the initialised watch as executing:\n%s", s.name, dump)
			}
			w.Stop()
		}
	})

	t.Run("panic releases its seat", func(t *testing.T) {
		var outcomes [][]string
		for _, s := range sides {
			var got []string
			for range 3 {
				o := fcDo(t, ctx, s.srv, "e2e-panicker", getNS, "panic")
				got = append(got, fcOutcomeClass(o))
			}
			if o := fcDo(t, ctx, s.srv, "e2e-after-panic", getNS+"?timeout=5s", ""); o.code != http.StatusOK {
				t.Errorf("%s: GET on the one-seat level after three panics = %+v, want 200 (a leaked seat would make it wait)", s.name, o)
			}
			fcSeatsFree(t, ctx, s)
			t.Logf("%s: panics answered %q", s.name, got)
			outcomes = append(outcomes, got)
		}
		if diff := cmp.Diff(outcomes[0], outcomes[1]); diff != "" {
			t.Errorf("panic outcomes differ (-upstream +fairslice):\n%s", diff)
		}
	})

	t.Run("timeout while executing", func(t *testing.T) {
		var codes []int
		for _, s := range sides {
			o := fcDo(t, ctx, s.srv, "e2e-slow", getNS+"?timeout=1s", "sleep=10s")
			t.Logf("%s: a 1 s request executing for longer answered %d %s after %v", s.name, o.code, o.err, o.elapsed.Round(time.Millisecond))
			if o.elapsed > 5*time.Second {
				t.Errorf("%s: answered after %v, want about the 1 s timeout", s.name, o.elapsed)
			}
			fcSeatsFree(t, ctx, s)
			if o := fcDo(t, ctx, s.srv, "e2e-after-timeout", getNS+"?timeout=5s", ""); o.code != http.StatusOK {
				t.Errorf("%s: GET on the level after the timeout = %+v, want 200", s.name, o)
			}
			codes = append(codes, o.code)
		}
		if codes[0] != codes[1] || codes[0] != http.StatusGatewayTimeout {
			t.Errorf("statuses upstream %d, fairslice %d: want both 504", codes[0], codes[1])
		}
	})

	t.Run("timeout while waiting", func(t *testing.T) {
		var codes []int
		reason := `apiserver_flowcontrol_rejected_requests_total{flow_schema="e2e-tight",priority_level="e2e-tight",reason="time-out"}`
		for _, s := range sides {
			before, _ := fcMetric(t, ctx, s.srv, reason)
			var wg sync.WaitGroup
			var holder fcOutcome
			wg.Go(func() { holder = fcDo(t, ctx, s.srv, "e2e-holder", getNS+"?timeout=20s", "sleep=4s") })
			fcEventually(t, s.name+": the holder executes", func() (bool, string) {
				v, _ := fcMetric(t, ctx, s.srv, `apiserver_flowcontrol_current_executing_seats{flow_schema="e2e-tight",priority_level="e2e-tight"}`)
				return v == 1, fmt.Sprintf("executing seats %v", v)
			})
			o := fcDo(t, ctx, s.srv, "e2e-waiter", getNS+"?timeout=1s", "")
			t.Logf("%s: a 1 s request queued behind the seat's holder answered %d %s after %v", s.name, o.code, o.err, o.elapsed.Round(time.Millisecond))
			// The filter lets a request wait in its queue for a quarter of
			// its timeout: it is rejected before the timeout filter's 504.
			if o.elapsed > 900*time.Millisecond {
				t.Errorf("%s: answered after %v, want about a quarter of the 1 s timeout", s.name, o.elapsed)
			}
			codes = append(codes, o.code)
			wg.Wait()
			if holder.code != http.StatusOK {
				t.Errorf("%s: the holder got %+v, want 200", s.name, holder)
			}
			fcSeatsFree(t, ctx, s)
			fcEventually(t, s.name+": the waiter counted as rejected for time-out", func() (bool, string) {
				after, _ := fcMetric(t, ctx, s.srv, reason)
				return after == before+1, fmt.Sprintf("%s went %v -> %v", reason, before, after)
			})
			if o := fcDo(t, ctx, s.srv, "e2e-after-wait", getNS+"?timeout=5s", ""); o.code != http.StatusOK {
				t.Errorf("%s: GET on the level afterwards = %+v, want 200", s.name, o)
			}
		}
		if codes[0] != codes[1] || codes[0] != http.StatusTooManyRequests {
			t.Errorf("statuses upstream %d, fairslice %d: want both 429", codes[0], codes[1])
		}
	})
}
