package apf

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
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
