package fairqueue

import (
	"testing"
	"time"
)

// TestEpochThresholdMatchesUpstream replays the arrivals of
// kube/verify/compare/fairqueue/testdata/epoch-threshold.json through the core and
// checks R and the queue's next dispatch R against the values upstream's
// QueueSet (k8s.io/apiserver v0.37.2) produced for the same events, read
// through kube/internal/upstream/upstreamqs (the kube module's differential test
// compares them after every event: go test -run
// TestDifferentialTestdata/epoch-threshold ./verify/compare/fairqueue/ in kube/).
// R passes the epoch threshold by 2 units at "crossing", so a changed
// threshold, or a changed decrement, fails here without the kube module.
// The queue's next dispatch R, below the decrement, wraps around at the
// epoch advance, as upstream's does.
func TestEpochThresholdMatchesUpstream(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	qs, err := NewQueueSet(Config{Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 1 << 20}, start)
	if err != nil {
		t.Fatal(err)
	}
	var long Request
	qs.Arrive(start, &long, 0, WorkEstimate{InitialSeats: 1 << 20})
	for _, step := range []struct {
		name     string
		at       time.Duration
		r, next  string // upstream's
		advances int
	}{
		{"10h", 10 * time.Hour, "37748736000.00000000ss", "37748736000.00000000ss", 0},
		{"20h", 20 * time.Hour, "75497472000.00000000ss", "37748736000.00000000ss", 0},
		{"30h", 30 * time.Hour, "113246208000.00000000ss", "37748736000.00000000ss", 0},
		{"36h", 36 * time.Hour, "135895449600.00000000ss", "37748736000.00000000ss", 0},
		{"1µs before", 36*time.Hour + 39*time.Minute + 1395332120, "138350580551.77306112ss", "37748736000.00000000ss", 0},
		{"below", 36*time.Hour + 39*time.Minute + 1395333119, "138350580552.82058854ss", "37748736000.00000000ss", 0},
		{"crossing", 36*time.Hour + 39*time.Minute + 1395333120, "46116860184.27387905ss", "129982456368.54775809ss", 1},
		{"after", 36*time.Hour + 39*time.Minute + 1396333120, "46116861232.84987905ss", "129982456368.54775809ss", 1},
	} {
		qs.Arrive(start.Add(step.at), new(Request), 1, WorkEstimate{InitialSeats: 1})
		d := qs.Dump()
		if got, next := d.CurrentR.String(), d.Queues[0].NextDispatchR.String(); got != step.r || next != step.next {
			t.Errorf("%s: R %s, next dispatch R %s; upstream %s, %s", step.name, got, next, step.r, step.next)
		}
		if got := qs.Counts().EpochAdvances; got != step.advances {
			t.Errorf("%s: %d epoch advances, want %d", step.name, got, step.advances)
		}
	}
}
