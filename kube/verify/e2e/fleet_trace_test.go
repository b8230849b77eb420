package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairslice/fairslice/apf/fleet"
)

// traceSteering, with FAIRSLICE_E2E_TRACE=1, logs what the GOAWAY test's
// targeted phase steered by: every summary a replica published (its
// flows' seats and demand for global-default), what Steered finds in it
// against the peers' last published, and every reconnection of a client
// (from which replica to which). It is a diagnostic, not a check.
var traceSteering = os.Getenv("FAIRSLICE_E2E_TRACE") == "1"

// traceLog collects trace lines with their time since the phase began.
type traceLog struct {
	mu    sync.Mutex
	start time.Time
	lines []string
}

func (l *traceLog) add(format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%6.2fs ", time.Since(l.start).Seconds())+fmt.Sprintf(format, args...))
}

func (l *traceLog) flush(t *testing.T) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		t.Log(s)
	}
}

// tracingStore is a fleet.Store that logs every summary published.
type tracingStore struct {
	fleet.Store
	log  *traceLog
	mu   sync.Mutex
	last map[string]fleet.Summary
}

func (s *tracingStore) Publish(ctx context.Context, sum fleet.Summary) error {
	s.mu.Lock()
	s.last[sum.Replica] = sum
	var peers []fleet.Summary
	for name, p := range s.last {
		if name != sum.Replica {
			peers = append(peers, p)
		}
	}
	s.mu.Unlock()
	var flows, steered []string
	for _, f := range sum.Flows {
		if f.Level == "global-default" {
			flows = append(flows, fmt.Sprintf("%s %.1f/%.1f", strings.TrimPrefix(f.Flow, "global-default/"), f.Seats, f.Demand))
		}
	}
	for _, f := range fleet.Steered(sum, peers) {
		steered = append(steered, strings.TrimPrefix(f.Flow, "global-default/"))
	}
	var caps []string
	for name, c := range fleet.FlowCaps("global-default", sum, peers) {
		caps = append(caps, fmt.Sprintf("%s %.1f", strings.TrimPrefix(name, "global-default/"), c))
	}
	current := 0
	for _, l := range sum.Levels {
		if l.Name == "global-default" {
			current = l.CurrentCL
		}
	}
	slices.Sort(flows)
	slices.Sort(caps)
	s.log.add("%s publishes global-default's current limit %d, seats/demand [%s]; against the peers' last: steered %v, caps [%s]",
		sum.Replica, current, strings.Join(flows, ", "), steered, strings.Join(caps, ", "))
	return s.Store.Publish(ctx, sum)
}
