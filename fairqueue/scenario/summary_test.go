package scenario

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	s := &Scenario{Requests: []Request{
		{ID: "a1", Hash: 1, Arrival: 0, InitialSeats: 2, Duration: time.Second},
		{ID: "a2", Hash: 1, Arrival: 0, InitialSeats: 1, Duration: time.Second},
		{ID: "b1", Hash: 2, Arrival: time.Second, InitialSeats: 1, Duration: 3 * time.Second},
		{ID: "b2", Hash: 2, Arrival: time.Second, InitialSeats: 1, Duration: time.Second},
		{ID: "c1", Hash: 3, Arrival: 2 * time.Second, InitialSeats: 1, Duration: time.Second},
		{ID: "c2", Hash: 3, Arrival: 2 * time.Second, InitialSeats: 1, Duration: time.Second},
	}}
	res := []Result{
		{ID: "a1", Outcome: OutcomeDispatched, DispatchedAt: 0},
		{ID: "a2", Outcome: OutcomeDispatched, DispatchedAt: time.Second},
		{ID: "b1", Outcome: OutcomeDispatched, DispatchedAt: time.Second},
		{ID: "b2", Outcome: OutcomeRejected, Reason: ReasonQueueFull},
		{ID: "c1", Outcome: OutcomeRejected, Reason: ReasonTimeOut},
		{ID: "c2", Outcome: OutcomeWaiting},
	}
	sum := Summarize(s, res)
	if sum.Span != 4*time.Second {
		t.Errorf("Summarize: Span = %v, want 4s", sum.Span)
	}
	want := []FlowStats{
		{Hash: 1, Requests: 2, Dispatched: 2, SeatSeconds: 3, Throughput: 0.5, WaitP50: 0, WaitP90: time.Second, WaitP99: time.Second},
		{Hash: 2, Requests: 2, Dispatched: 1, Rejected: 1, SeatSeconds: 3, Throughput: 0.25},
		{Hash: 3, Requests: 2, TimedOut: 1, Waiting: 1},
	}
	if len(sum.Flows) != len(want) {
		t.Fatalf("Summarize: %d flows, want %d", len(sum.Flows), len(want))
	}
	for i := range want {
		if sum.Flows[i] != want[i] {
			t.Errorf("Summarize: flow %d = %+v, want %+v", i, sum.Flows[i], want[i])
		}
	}
	// Jain over (3, 3, 0): 36 / (3·18) = 2/3.
	if math.Abs(sum.Fairness-2.0/3) > 1e-12 {
		t.Errorf("Summarize: Fairness = %v, want 2/3", sum.Fairness)
	}
	var b strings.Builder
	if err := sum.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"wait p99", "span 4s, 3 flows, Jain's fairness index over seat-seconds 0.6667"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("WriteText = %q, want it to contain %q", b.String(), w)
		}
	}
}

func TestPercentile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct {
		p    int
		want time.Duration
	}{{50, 5}, {90, 9}, {99, 10}, {1, 1}} {
		if got := percentile(d, tt.p); got != tt.want {
			t.Errorf("percentile(1..10, %d) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile(nil, 50) = %v, want 0", got)
	}
	if got := Summarize(&Scenario{}, nil).Fairness; got != 1 {
		t.Errorf("Summarize(empty).Fairness = %v, want 1", got)
	}
}
