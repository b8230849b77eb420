package apf

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTargetedGoAwayClosesHeavyFlowsConnection runs the middleware on an
// HTTP/2 server: the target flow's first request closes its connection
// (GOAWAY), so its next one opens a new connection; within the interval
// no other is closed, and other flows keep theirs.
func TestTargetedGoAwayClosesHeavyFlowsConnection(t *testing.T) {
	g, get, conns := goAwayServer(t, nil)
	g.Target(FlowKey{"global-default", "global-default", "heavy"}, true)
	steps := []struct {
		user  string
		conns int32
	}{
		{"heavy", 1}, // answered with GOAWAY
		{"heavy", 2}, // on a new connection; not closed within the interval
		{"heavy", 2},
		{"light", 2},
	}
	for i, s := range steps {
		get(s.user, http.StatusOK)
		if got := conns.Load(); got != s.conns {
			t.Errorf("after request %d (%s): %d connections, want %d", i, s.user, got, s.conns)
		}
	}
	if g.Closed() != 1 {
		t.Errorf("Closed() = %d, want 1", g.Closed())
	}
	g.Target(FlowKey{}, false)
}

// goAwayServer serves the middleware of a controller of 600 seats (with
// FlowLimiter fl, if not nil) and a TargetedGoAway g of interval one hour
// on an HTTP/2 test server; both end with the test. get sends one
// request as user and checks it is answered over HTTP/2 with status;
// conns counts the connections the server has accepted.
func goAwayServer(t *testing.T, fl *FlowLimiter) (g *TargetedGoAway, get func(user string, status int), conns *atomic.Int32) {
	t.Helper()
	c, err := New(nil, Options{ServerConcurrencyLimit: 600, FlowLimiter: fl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if g, err = NewTargetedGoAway(time.Hour); err != nil {
		t.Fatal(err)
	}
	h, err := c.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), HandlerOptions{User: RequestHeaderUser, GoAway: g})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.EnableHTTP2 = true
	conns = new(atomic.Int32)
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	client := ts.Client()
	client.Timeout = 10 * time.Second
	return g, func(user string, status int) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+"/api/v1/namespaces/default/configmaps/x", nil)
		req.Header.Set("X-Remote-User", user)
		req.Header.Set("X-Remote-Group", "system:authenticated")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != status {
			t.Fatalf("GET as %s: %s %s, want HTTP/2 %d", user, resp.Proto, resp.Status, status)
		}
	}, conns
}

// TestTargetedGoAwayClosesOnRejection: a rejected request of the target
// flow (here refused by a FlowLimiter cap of 0) carries the GOAWAY as an
// admitted one does, so the client's next request opens a new connection.
func TestTargetedGoAwayClosesOnRejection(t *testing.T) {
	fl := NewFlowLimiter()
	g, get, conns := goAwayServer(t, fl)
	heavy := FlowKey{"global-default", "global-default", "heavy"}
	fl.SetCaps(map[FlowKey]float64{heavy: 0})
	g.Target(heavy, true)
	get("heavy", http.StatusTooManyRequests) // rejected, with GOAWAY
	get("heavy", http.StatusTooManyRequests) // on a new connection
	if got := conns.Load(); got != 2 || g.Closed() != 1 {
		t.Errorf("after two rejected requests: %d connections, Closed() = %d; want 2 and 1", got, g.Closed())
	}
}

func TestTargetedGoAwayRate(t *testing.T) {
	g, _ := NewTargetedGoAway(time.Second)
	heavy := FlowKey{"l", "s", "heavy"}
	if g.Closes(time.Unix(0, 0), time.Unix(0, 0), heavy) {
		t.Error("Closes with no target = true")
	}
	g.Target(heavy, true)
	at := func(ms int) time.Time { return time.Unix(100, 0).Add(time.Duration(ms) * time.Millisecond) }
	for _, s := range []struct {
		ms, arrivedMs int
		flow          FlowKey
		want          bool
	}{
		{0, -5000, heavy, true}, {500, 400, heavy, false}, {999, 999, heavy, false}, {1000, 1000, heavy, true},
		{3000, 3000, FlowKey{"l", "s", "other"}, false}, {3001, 3001, heavy, true},
		// Arrived by the close at 3001: maybe on the connection it closed.
		{5000, 2000, heavy, false}, {5000, 3001, heavy, false}, {5000, 3002, heavy, true},
	} {
		if got := g.Closes(at(s.ms), at(s.arrivedMs), s.flow); got != s.want {
			t.Errorf("Closes(+%dms, arrived +%dms, %v) = %v, want %v", s.ms, s.arrivedMs, s.flow.Distinguisher, got, s.want)
		}
	}
	if _, err := NewTargetedGoAway(-1); err == nil {
		t.Error("NewTargetedGoAway(-1) = nil error")
	}
}

// TestTargetedGoAwayPerFlow: each target flow has its own interval, so two
// targets each close once within one interval; SetTargets replaces the
// targets, keeping the last close of a flow that stays; Target(f, false)
// removes f alone; the zero TargetedGoAway closes at most one connection
// of a flow per DefaultGoAwayInterval.
func TestTargetedGoAwayPerFlow(t *testing.T) {
	a, b, c := FlowKey{"l", "s", "a"}, FlowKey{"l", "s", "b"}, FlowKey{"l", "s", "c"}
	at := func(ms int) time.Time { return time.Unix(100, 0).Add(time.Duration(ms) * time.Millisecond) }
	g, _ := NewTargetedGoAway(time.Second)
	g.SetTargets([]FlowKey{a, b})
	type step struct {
		ms   int
		flow FlowKey
		want bool
	}
	check := func(name string, steps ...step) {
		t.Helper()
		for _, s := range steps {
			if got := g.Closes(at(s.ms), at(s.ms), s.flow); got != s.want {
				t.Errorf("%s: Closes(+%dms, %s) = %v, want %v", name, s.ms, s.flow.Distinguisher, got, s.want)
			}
		}
	}
	check("a and b targeted", step{0, a, true}, step{1, b, true}, step{2, c, false}, step{500, a, false})
	g.SetTargets([]FlowKey{a, c})
	check("a and c targeted", step{600, a, false}, step{601, b, false}, step{602, c, true}, step{1000, a, true})
	g.Target(c, false)
	check("c removed", step{3000, c, false}, step{3001, a, true})
	if got, want := len(g.Targets()), 1; got != want {
		t.Errorf("Targets() = %v, want %d flow", g.Targets(), want)
	}
	if g.Closed() != 5 {
		t.Errorf("Closed() = %d, want 5", g.Closed())
	}
	var zero TargetedGoAway
	zero.Target(a, true)
	check2 := []bool{zero.Closes(at(0), at(0), a), zero.Closes(at(999), at(999), a), zero.Closes(at(1000), at(1000), a)}
	if d := cmp.Diff([]bool{true, false, true}, check2); d != "" {
		t.Errorf("the zero TargetedGoAway at 0, 999 ms and 1 s (-want +got):\n%s", d)
	}
}
