package apf

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// DefaultGoAwayInterval is TargetedGoAway's default shortest time between
// two connections it closes.
const DefaultGoAwayInterval = time.Second

// TargetedGoAway, beyond upstream, closes the HTTP/2 connection of one
// heavy flow when this replica is over its share of a fleet and other
// replicas have seats idle, so that the client's load balancer moves it:
// what upstream's --goaway-chance does to random connections, aimed.
// Whoever knows the fleet (package apf/fleet's Coordinator) calls Target
// every period; the Handler middleware (HandlerOptions.GoAway) asks it
// for each HTTP/2 request admitted or rejected. A request of the target
// flow gets the response header Connection: close, which makes net/http's
// HTTP/2 server send GOAWAY, as upstream's goaway filter does; at most
// one per Interval, and only while the target is set. A rejection moves
// the client as well as a response does, and sooner: the requests of a
// flow over its share wait long in their queues. The zero state closes
// nothing. Safe for concurrent use; Closes costs one mutex per HTTP/2
// request.
type TargetedGoAway struct {
	interval time.Duration

	mu     sync.Mutex
	target FlowKey
	on     bool
	last   time.Time
	closed int
}

// NewTargetedGoAway returns a TargetedGoAway closing at most one
// connection per interval (0: DefaultGoAwayInterval).
func NewTargetedGoAway(interval time.Duration) (*TargetedGoAway, error) {
	if interval < 0 {
		return nil, fmt.Errorf("apf: TargetedGoAway interval=%v must not be negative", interval)
	}
	if interval == 0 {
		interval = DefaultGoAwayInterval
	}
	return &TargetedGoAway{interval: interval}, nil
}

// Target sets the flow whose connections to close (on), or closes
// nothing (!on).
func (g *TargetedGoAway) Target(flow FlowKey, on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.target, g.on = flow, on
}

// Closes reports whether the connection of a request of flow that
// arrived at arrived, answered at now, is to be closed, and counts it if
// so. A request that arrived before the last close closes nothing: it
// may have come on the connection that close ended (HTTP/2 lets the
// streams open at a GOAWAY finish, so a moved client's queued requests
// are still answered here), and closing that again would move nobody.
func (g *TargetedGoAway) Closes(now, arrived time.Time, flow FlowKey) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.on || flow != g.target || (!g.last.IsZero() && (now.Sub(g.last) < g.interval || !arrived.After(g.last))) {
		return false
	}
	g.last = now
	g.closed++
	return true
}

// Closed returns how many connections it has closed.
func (g *TargetedGoAway) Closed() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// goAway sets Connection: close on the response to an HTTP/2 request of
// the target flow, admitted or rejected, that arrived at arrived.
func (h *handler) goAway(w http.ResponseWriter, proto string, arrived time.Time, cl *Classification) {
	if h.opts.GoAway == nil || proto != "HTTP/2.0" {
		return
	}
	if h.opts.GoAway.Closes(h.c.clock.Now(), arrived, FlowKey{cl.PriorityLevel, cl.FlowSchema, cl.Distinguisher}) {
		w.Header().Set("Connection", "close")
	}
}
