package apf

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// DefaultGoAwayInterval is TargetedGoAway's default shortest time between
// two connections of one flow it closes.
const DefaultGoAwayInterval = time.Second

// TargetedGoAway, beyond upstream, closes the HTTP/2 connections of the
// flows it targets, so that their clients' load balancers move them:
// what upstream's --goaway-chance does to random connections, aimed at
// the flows a move helps. Whoever knows the fleet (package apf/fleet's
// Coordinator) sets the targets every period; the Handler middleware
// (HandlerOptions.GoAway) asks it for each HTTP/2 request admitted or
// rejected. A request of a target flow gets the response header
// Connection: close, which makes net/http's HTTP/2 server send GOAWAY,
// as upstream's goaway filter does; at most one per target flow per
// interval, and only while the flow is targeted. A rejection moves the
// client as well as a response does, and sooner. The zero state closes
// nothing. Safe for concurrent use; Closes costs one mutex and one map
// lookup per HTTP/2 request.
type TargetedGoAway struct {
	interval time.Duration

	mu      sync.Mutex
	targets map[FlowKey]time.Time // each target flow's last close; zero: none yet
	closed  int
}

// NewTargetedGoAway returns a TargetedGoAway closing at most one
// connection of each target flow per interval (0: DefaultGoAwayInterval).
func NewTargetedGoAway(interval time.Duration) (*TargetedGoAway, error) {
	if interval < 0 {
		return nil, fmt.Errorf("apf: TargetedGoAway interval=%v must not be negative", interval)
	}
	if interval == 0 {
		interval = DefaultGoAwayInterval
	}
	return &TargetedGoAway{interval: interval, targets: map[FlowKey]time.Time{}}, nil
}

// Target adds flow to the flows whose connections to close (on), or
// removes it (!on); the other targets stay.
func (g *TargetedGoAway) Target(flow FlowKey, on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.targets == nil {
		g.targets = map[FlowKey]time.Time{}
	}
	if _, ok := g.targets[flow]; ok == on {
		return
	}
	if on {
		g.targets[flow] = time.Time{}
	} else {
		delete(g.targets, flow)
	}
}

// SetTargets makes flows the flows whose connections to close, and no
// other; a flow that stays targeted keeps the time of its last close.
func (g *TargetedGoAway) SetTargets(flows []FlowKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	next := make(map[FlowKey]time.Time, len(flows))
	for _, f := range flows {
		next[f] = g.targets[f]
	}
	g.targets = next
}

// Closes reports whether the connection of a request of flow that
// arrived at arrived, answered at now, is to be closed, and counts it if
// so. A request that arrived before the flow's last close closes
// nothing: it may have come on the connection that close ended (HTTP/2
// lets the streams open at a GOAWAY finish, so a moved client's queued
// requests are still answered here), and closing that again would move
// nobody.
func (g *TargetedGoAway) Closes(now, arrived time.Time, flow FlowKey) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	interval := g.interval
	if interval == 0 {
		interval = DefaultGoAwayInterval // the zero TargetedGoAway's
	}
	last, ok := g.targets[flow]
	if !ok || (!last.IsZero() && (now.Sub(last) < interval || !arrived.After(last))) {
		return false
	}
	g.targets[flow] = now
	g.closed++
	return true
}

// Targets returns the flows targeted, in no particular order.
func (g *TargetedGoAway) Targets() []FlowKey {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]FlowKey, 0, len(g.targets))
	for f := range g.targets {
		out = append(out, f)
	}
	return out
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
