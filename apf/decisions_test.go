package apf

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The wire names, as literals: a test that used the constants on both sides
// would pass whatever they said.
func TestHeaderNameLiterals(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{HeaderFlowSchemaUID, "X-Kubernetes-PF-FlowSchema-UID"},
		{HeaderPriorityLevelUID, "X-Kubernetes-PF-PriorityLevel-UID"},
		{HeaderRemoteUser, "X-Remote-User"},
		{HeaderRemoteGroup, "X-Remote-Group"},
	} {
		if tc.got != tc.want {
			t.Errorf("header constant = %q, want %q", tc.got, tc.want)
		}
	}
	c, _ := newTestController(t, 4)
	h, _ := c.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), HandlerOptions{User: RequestHeaderUser})
	req := httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods", nil)
	req.Header["X-Remote-User"] = []string{"alice"}
	req.Header["X-Remote-Group"] = []string{"tenants"}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	want := c.Classify(tenant("alice"))
	if got := rec.Header()["X-Kubernetes-Pf-Flowschema-Uid"]; len(got) != 1 || got[0] != want.FlowSchemaUID {
		t.Errorf("response X-Kubernetes-PF-FlowSchema-UID = %v, want [%s]", got, want.FlowSchemaUID)
	}
	if got := rec.Header()["X-Kubernetes-Pf-Prioritylevel-Uid"]; len(got) != 1 || got[0] != want.PriorityLevelUID {
		t.Errorf("response X-Kubernetes-PF-PriorityLevel-UID = %v, want [%s]", got, want.PriorityLevelUID)
	}
}

func masters(user string) *Request {
	return &Request{
		User: User{Name: user, Groups: []string{"system:masters", "system:authenticated"}},
		Info: RequestInfo{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "pods", Namespace: "ns", Path: "/api/v1/namespaces/ns/pods"},
	}
}

// Exempt requests are admitted without limit, far past the server's
// concurrency, through Wait and through the middleware.
func TestExemptAdmittedWithoutLimit(t *testing.T) {
	const serverCL, n = 2, 20
	c, err := New(nil, Options{ServerConcurrencyLimit: serverCL, AdjustPeriod: ManualAdjustment})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var held []Ticket
	for i := range n {
		tk, err := c.Wait(context.Background(), masters(fmt.Sprint("admin-", i)), nil)
		if err != nil {
			t.Fatalf("Wait(system:masters #%d) at %d seats = %v, want admitted", i, serverCL, err)
		}
		if !tk.Classification().Exempt || tk.Classification().PriorityLevel != "exempt" {
			t.Fatalf("system:masters classified %+v, want exempt", tk.Classification())
		}
		held = append(held, tk)
	}
	for _, tk := range held {
		tk.Finish()
	}

	defer goleak.VerifyNone(t)
	b := newBlocker()
	h, _ := c.Handler(b, HandlerOptions{User: RequestHeaderUser})
	codes := make(chan int, n)
	for i := range n {
		go func() {
			codes <- get(t, h, "/api/v1/namespaces/ns/pods", fmt.Sprint("admin-", i), "system:masters").Code
		}()
	}
	for range n { // all n in the handler at once
		select {
		case <-b.entered:
		case <-time.After(10 * time.Second):
			t.Fatalf("not all %d exempt requests entered the handler at %d seats", n, serverCL)
		}
	}
	close(b.release)
	for range n {
		select {
		case code := <-codes:
			if code != http.StatusOK {
				t.Errorf("exempt request: status %d, want 200", code)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("exempt requests did not finish")
		}
	}
}

// A handler that panics still gives its seats back.
func TestHandlerPanicReleasesSeats(t *testing.T) {
	c, _ := newTestController(t, 4)
	h, _ := c.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), HandlerOptions{User: RequestHeaderUser})
	for range 5 { // more than the level's 3 seats
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Errorf("recovered %v, want the handler's panic (every request admitted)", r)
				}
			}()
			// A deadline, so that seats left held make this request time
			// out instead of waiting for ever on the fake clock.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			req := httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods", nil).WithContext(ctx)
			req.Header.Set(HeaderRemoteUser, "alice")
			req.Header.Set(HeaderRemoteGroup, "tenants")
			h.ServeHTTP(httptest.NewRecorder(), req)
		}()
	}
	if qs := c.Dump()[levelIndex(c, "work")].QueueSet; qs.Executing != 0 || qs.SeatsInUse != 0 {
		t.Errorf("after panicking handlers: executing %d, seats in use %d; want 0, 0", qs.Executing, qs.SeatsInUse)
	}
}

// DefaultLongRunning is kube-apiserver's list: the verbs watch and proxy,
// the subresources attach, exec, proxy, log and portforward of resource
// requests, and /debug/pprof/.
func TestDefaultLongRunning(t *testing.T) {
	for _, tc := range []struct {
		ri   RequestInfo
		want bool
	}{
		{RequestInfo{IsResourceRequest: true, Verb: "watch", Resource: "pods"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "proxy", Resource: "nodes"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "pods"}, false},
		{RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "pods"}, false},
		{RequestInfo{IsResourceRequest: true, Verb: "create", Resource: "pods", Subresource: "exec"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "pods", Subresource: "log"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "create", Resource: "pods", Subresource: "attach"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "pods", Subresource: "proxy"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "create", Resource: "pods", Subresource: "portforward"}, true},
		{RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "pods", Subresource: "status"}, false},
		{RequestInfo{IsResourceRequest: true, Verb: "create", Resource: "pods", Subresource: "eviction"}, false},
		{RequestInfo{Verb: "get", Path: "/debug/pprof/profile"}, true},
		{RequestInfo{Verb: "get", Path: "/debug/pprof"}, false},
		{RequestInfo{Verb: "get", Path: "/healthz"}, false},
		{RequestInfo{Verb: "get", Path: "/logs/x", Subresource: "log"}, false},
	} {
		if got := DefaultLongRunning(nil, &tc.ri); got != tc.want {
			t.Errorf("DefaultLongRunning(%+v) = %v, want %v", tc.ri, got, tc.want)
		}
	}
}

// A client that reaches the server directly cannot make itself exempt by
// a header once the handler is wrapped in RefuseReservedIdentities.
func TestClientCannotBecomeExemptByHeader(t *testing.T) {
	c, err := New(nil, Options{ServerConcurrencyLimit: 600})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var seen []Classification
	api := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		tk, _ := TicketFromContext(r.Context())
		mu.Lock()
		seen = append(seen, tk.Classification())
		mu.Unlock()
	})
	h, _ := c.Handler(api, HandlerOptions{User: RequestHeaderUser})

	// Unguarded, the header is believed: this is the danger.
	if rec := get(t, h, "/api/v1/namespaces/ns/pods", "mallory", "system:masters"); rec.Code != http.StatusOK || !seen[0].Exempt {
		t.Fatalf("unguarded: status %d, classification %+v; want 200 exempt (the documented danger)", rec.Code, seen)
	}

	guarded := RefuseReservedIdentities(h)
	for _, tc := range []struct {
		user   string
		groups []string
		want   int
	}{
		{"mallory", []string{"system:masters"}, http.StatusForbidden},
		{"mallory", []string{"developers", " system:masters"}, http.StatusForbidden},
		{"system:admin", nil, http.StatusForbidden},
		{"system:serviceaccount:kube-system:x", nil, http.StatusForbidden},
		{"mallory", []string{"system:authenticated"}, http.StatusForbidden},
		{"alice", []string{"developers"}, http.StatusOK},
		{"", nil, http.StatusOK}, // anonymous
	} {
		seen = nil
		rec := get(t, guarded, "/api/v1/namespaces/ns/pods", tc.user, tc.groups...)
		if rec.Code != tc.want {
			t.Errorf("RefuseReservedIdentities(user %q, groups %q): status %d, want %d", tc.user, tc.groups, rec.Code, tc.want)
		}
		for _, cl := range seen {
			if cl.Exempt {
				t.Errorf("user %q, groups %q reached the exempt level", tc.user, tc.groups)
			}
		}
		if tc.want == http.StatusForbidden && !strings.Contains(rec.Body.String(), "reserved") {
			t.Errorf("403 body = %q, want it to say the identity is reserved", rec.Body.String())
		}
	}
}

func TestIsReserved(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"system:masters", true}, {"system:anonymous", true}, {" system:masters", true},
		{"systems:masters", false}, {"alice", false}, {"", false}, {"my-system:x", false},
	} {
		if got := IsReserved(tc.name); got != tc.want {
			t.Errorf("IsReserved(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The non-Kubernetes preset turns on every fix of an upstream bug.
func TestStandaloneOptions(t *testing.T) {
	o := StandaloneOptions(30)
	for _, tc := range []struct {
		name string
		on   bool
	}{
		{"ServerConcurrencyLimit", o.ServerConcurrencyLimit == 30},
		{"AdjustOnStarvation", o.AdjustOnStarvation},
		{"Borrowing.SubtractExemptUsage", o.Borrowing.SubtractExemptUsage},
		{"QueueSet.FixZeroLimitAdmission", o.QueueSet.FixZeroLimitAdmission},
		{"QueueSet.ClampFinalSeatsWithoutQueues", o.QueueSet.ClampFinalSeatsWithoutQueues},
		{"QueueSet.FixStaleQueueRemoval", o.QueueSet.FixStaleQueueRemoval},
		{"strict (not Lenient)", !o.Lenient},
		{"own adjustment (AdjustPeriod 0)", o.AdjustPeriod == 0},
	} {
		if !tc.on {
			t.Errorf("StandaloneOptions(30): %s not set", tc.name)
		}
	}
}
