package apf

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// blocker is a handler that holds each request until released.
type blocker struct {
	entered chan string
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan string, 64), release: make(chan struct{})}
}

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("watch") != "" {
		SignalWatchInitialized(r.Context())
	}
	b.entered <- r.URL.Path
	select {
	case <-b.release:
	case <-time.After(10 * time.Second):
	}
	w.WriteHeader(http.StatusOK)
}

func get(t *testing.T, h http.Handler, target string, user string, groups ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	req.Header.Set(HeaderRemoteUser, user)
	for _, g := range groups {
		req.Header.Add(HeaderRemoteGroup, g)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandler429AndHeaders(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, _ := newTestController(t, 4) // catch-all gets ceil(4·5/15) = 2 seats
	b := newBlocker()
	h, err := c.Handler(b, HandlerOptions{User: RequestHeaderUser})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes := make(chan int, 4)
	for range 2 { // fill catch-all (reject type: no queues)
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- get(t, h, "/api/v1/namespaces/a/pods/p", "stranger").Code
		}()
	}
	recv(t, b.entered, "handler entered")
	recv(t, b.entered, "handler entered")
	rec := get(t, h, "/api/v1/namespaces/a/pods/p", "stranger")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" ||
		!strings.Contains(rec.Body.String(), "Too many requests, please try again later.") {
		t.Errorf("third request to a full reject-type level: %d %q Retry-After %q", rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"))
	}
	cl := c.Classify(&Request{User: User{Name: "stranger", Groups: []string{"system:authenticated"}}, Info: RequestInfo{Verb: "get"}})
	if rec.Header().Get(HeaderFlowSchemaUID) != cl.FlowSchemaUID || rec.Header().Get(HeaderPriorityLevelUID) != cl.PriorityLevelUID || cl.FlowSchemaUID == "" {
		t.Errorf("429 UID headers = %q, %q, want %q, %q", rec.Header().Get(HeaderFlowSchemaUID), rec.Header().Get(HeaderPriorityLevelUID), cl.FlowSchemaUID, cl.PriorityLevelUID)
	}
	// Long-running requests bypass APF even when its level is full.
	go func() { codes <- get(t, h, "/api/v1/namespaces/a/pods/p/exec", "stranger").Code }()
	recv(t, b.entered, "handler entered")
	close(b.release)
	wg.Wait()
	for range 3 {
		if code := recv(t, codes, "response"); code != http.StatusOK {
			t.Errorf("admitted request answered %d", code)
		}
	}
	rec = get(t, h, "/api/v1/namespaces/a/pods/p", "stranger")
	if rec.Code != http.StatusOK || rec.Header().Get(HeaderFlowSchemaUID) != cl.FlowSchemaUID {
		t.Errorf("admitted request: %d, FlowSchema UID %q", rec.Code, rec.Header().Get(HeaderFlowSchemaUID))
	}
}

func TestHandlerWatchReleasesSeatsAtInit(t *testing.T) {
	c, _ := newTestController(t, 4) // work: 3 seats
	b := newBlocker()
	wt := NewWatchTracker()
	h, _ := c.Handler(b, HandlerOptions{User: RequestHeaderUser, Watches: wt})
	done := make(chan int, 1)
	go func() { done <- get(t, h, "/api/v1/namespaces/a/pods?watch=1", "w", "tenants").Code }()
	recv(t, b.entered, "handler entered")
	lv := c.Dump()[levelIndex(c, "work")].QueueSet
	if lv.Executing != 0 || lv.SeatsInUse != 0 {
		t.Errorf("initialized watch still holds seats: executing %d, seats %d", lv.Executing, lv.SeatsInUse)
	}
	ri, _ := ParseRequestInfo(httptest.NewRequest("PUT", "/api/v1/namespaces/a/pods/p", nil))
	if n := wt.InterestedWatchCount(&ri); n != 1 {
		t.Errorf("watches registered while the watch runs = %d, want 1", n)
	}
	close(b.release)
	if code := recv(t, done, "response"); code != http.StatusOK {
		t.Errorf("watch answered %d", code)
	}
	if n := wt.InterestedWatchCount(&ri); n != 0 {
		t.Errorf("watches registered after the watch ended = %d, want 0", n)
	}
}

// Handler refuses a nil next handler, which would panic on the first
// request, and reports every problem of its arguments at once.
func TestHandlerRefusesNilNextAndReportsEveryProblem(t *testing.T) {
	c, _ := newTestController(t, 4)
	ok := HandlerOptions{User: RequestHeaderUser}
	for _, tc := range []struct {
		name string
		next http.Handler
		opts HandlerOptions
		want []string // substrings of the error, one per problem
	}{
		{"nil next", nil, ok, []string{"apf: Handler's next is nil"}},
		{"nil HandlerFunc", http.HandlerFunc(nil), ok, []string{"apf: Handler's next is nil"}},
		{"no User", http.NotFoundHandler(), HandlerOptions{}, []string{"apf: HandlerOptions.User is required"}},
		{"negative wait limit", http.NotFoundHandler(), HandlerOptions{User: RequestHeaderUser, DefaultWaitLimit: -time.Second},
			[]string{"apf: HandlerOptions.DefaultWaitLimit=-1s must not be negative"}},
		{"all three", nil, HandlerOptions{DefaultWaitLimit: -time.Second},
			[]string{"next is nil", "User is required", "DefaultWaitLimit=-1s"}},
	} {
		h, err := c.Handler(tc.next, tc.opts)
		if err == nil || h != nil {
			t.Errorf("%s: Handler = %v, %v; want nil and an error", tc.name, h, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Handler error = %q, want it to contain %q", tc.name, err, w)
			}
		}
	}
}

func TestHandlerErrors(t *testing.T) {
	c, _ := newTestController(t, 4)
	if _, err := c.Handler(http.NotFoundHandler(), HandlerOptions{}); err == nil {
		t.Error("Handler without User: nil error")
	}
	h, _ := c.Handler(http.NotFoundHandler(), HandlerOptions{User: func(*http.Request) (User, bool) { return User{}, false }})
	if rec := get(t, h, "/api/v1/pods", "x"); rec.Code != http.StatusInternalServerError {
		t.Errorf("request without a user: %d, want 500", rec.Code)
	}
	h, _ = c.Handler(http.NotFoundHandler(), HandlerOptions{User: RequestHeaderUser})
	c.Close()
	rec := get(t, h, "/api/v1/pods", "x", "tenants")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "5" ||
		rec.Header().Get("X-Kubernetes-PF-PriorityLevel-UID") == "" || rec.Header().Get("X-Kubernetes-PF-FlowSchema-UID") == "" {
		t.Errorf("request after Close: %d %v, want 429 with Retry-After 5 and the PF headers", rec.Code, rec.Header())
	}
}

func TestDebugHandler(t *testing.T) {
	c, _ := newTestController(t, 4)
	tk, err := c.Wait(t.Context(), tenant("alice"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Finish()
	h := c.DebugHandler()
	body := func(target string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		return rec.Body.String()
	}
	pl := body(DebugPathPriorityLevels)
	want := "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests\n"
	if !strings.HasPrefix(pl, strings.Join(strings.Fields(want), " ")) && !strings.HasPrefix(collapse(pl), collapse(want)) {
		t.Errorf("dump_priority_levels header:\n%s", pl)
	}
	lines := strings.Split(strings.TrimSpace(pl), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "catch-all,") || !strings.HasPrefix(lines[3], "work,") {
		t.Errorf("dump_priority_levels rows not one per level in name order:\n%s", pl)
	}
	if got := collapse(lines[3]); got != "work, 0, false, false, 0, 1, 1, 0, 0, 0" {
		t.Errorf("work row = %q", got)
	}
	q := body(DebugPathQueues)
	if n := strings.Count(q, "\nwork,"); n != 4 {
		t.Errorf("dump_queues has %d rows for work, want 4 (one per queue):\n%s", n, q)
	}
	r := body(DebugPathRequests + "?includeRequestDetails=1")
	if !strings.Contains(collapse(r), "UserName, Verb, APIPath, Namespace, Name, APIVersion, Resource, SubResource") ||
		!strings.Contains(collapse(r), "alice, get, /api/v1/namespaces/ns/pods/p, ns, p, v1, pods,") ||
		!strings.Contains(collapse(r), "work, tenants,") {
		t.Errorf("dump_requests with details:\n%s", r)
	}
	if strings.Contains(body(DebugPathRequests), "alice, get") {
		t.Errorf("dump_requests without details shows details")
	}
}

// collapse squeezes the tabwriter's padding to single spaces.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// A client that goes away while its request waits leaves the queue at once.
func TestHandlerClientDisconnectLeavesQueue(t *testing.T) {
	c, _ := newTestController(t, 4) // work: 3 seats
	for range 3 {
		if _, err := c.Wait(t.Context(), tenant("busy"), nil); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := c.Handler(http.NotFoundHandler(), HandlerOptions{User: RequestHeaderUser})
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest("GET", "/api/v1/namespaces/a/pods/p", nil).WithContext(ctx)
	req.Header.Set(HeaderRemoteUser, "gone")
	req.Header.Add(HeaderRemoteGroup, "tenants")
	done := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		done <- rec.Code
	}()
	waitFor(t, func() bool { return c.Dump()[levelIndex(c, "work")].QueueSet.Waiting == 1 })
	cancel()
	select {
	case code := <-done:
		if code != http.StatusTooManyRequests {
			t.Errorf("disconnected request answered %d, want 429", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler still waiting 5s after the client went away")
	}
	d := c.Dump()[levelIndex(c, "work")].QueueSet
	if d.Waiting != 0 || d.Cancelled != 1 {
		t.Errorf("after the disconnect: waiting %d, cancelled %d; want 0, 1", d.Waiting, d.Cancelled)
	}
}
