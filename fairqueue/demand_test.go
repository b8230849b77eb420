package fairqueue

import (
	"math"
	"testing"
	"time"
)

func TestDemandStatsMoments(t *testing.T) {
	var d DemandStats
	d.Start(t0, 0)
	d.Set(t0.Add(time.Second), 2)
	d.Set(t0.Add(3*time.Second), 0)
	got := d.Results(t0.Add(4 * time.Second))
	want := DemandResults{Duration: 4, Average: 1, Deviation: 1, Min: 0, Max: 2}
	if got != want {
		t.Errorf("Results = %+v, want %+v", got, want)
	}
	r := d.Reset(t0.Add(4 * time.Second))
	if r != want {
		t.Errorf("Reset = %+v, want %+v", r, want)
	}
	got = d.Results(t0.Add(4 * time.Second))
	if got.Duration != 0 || !math.IsNaN(got.Average) || got.Min != 0 || got.Max != 0 {
		t.Errorf("Results right after Reset = %+v, want zero duration, NaN average", got)
	}
}

func TestQueueSetSeatDemand(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 1})
	a := arrive(t, qs, 0, 0, one(), "", StateExecuting)
	b := arrive(t, qs, 0, 0, seats(3), "", StateWaiting) // demand 1 + 3
	qs.Finish(t0.Add(time.Second), a)                    // b runs alone: demand 3
	qs.Finish(t0.Add(2*time.Second), b)                  // demand 0
	got := qs.Demand(t0.Add(4 * time.Second))
	if got.Duration != 4 || got.Average != 1.75 || got.Max != 4 || got.Min != 0 {
		t.Errorf("Demand = %+v, want 4s, average 1.75, max 4, min 0", got)
	}
}

// Reading or resetting the seat demand must not make the next event
// integrate again the time since the queue set's previous event: upstream's
// integrator keeps its own last time, so an adjustment (ResetDemand, then
// Reconfigure at the same instant) followed by a second one with no time
// passing sees a period of zero duration.
func TestQueueSetSeatDemandResetThenEvent(t *testing.T) {
	cfg := Config{Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 4}
	qs, _ := newTestSet(t, cfg)
	arrive(t, qs, 0, 0, seats(3), "", StateExecuting) // demand 3 from t0
	at := t0.Add(2 * time.Second)
	first := qs.ResetDemand(at)
	if first.Duration != 2 || first.Average != 3 {
		t.Fatalf("first ResetDemand = %+v, want 2 s at 3 seats", first)
	}
	if err := qs.Reconfigure(at, cfg); err != nil {
		t.Fatal(err)
	}
	if got := qs.ResetDemand(at); got.Duration != 0 || !math.IsNaN(got.Average) {
		t.Errorf("ResetDemand again at the same time = %+v, want a zero-duration period (NaN average)", got)
	}
	// An event a second later integrates one second, not three.
	arrive(t, qs, 3*time.Second, 0, one(), "", StateExecuting)
	if got := qs.Demand(t0.Add(3 * time.Second)); got.Duration != 1 {
		t.Errorf("Demand one second after the reset = %+v, want Duration 1", got)
	}
	// Nor does a read ahead of the queue set's time: 3 s at 3 seats, 1 s
	// at 4, then 2 s at 5.
	if got := qs.Demand(t0.Add(5 * time.Second)); got.Duration != 3 {
		t.Errorf("Demand at +5s = %+v, want Duration 3", got)
	}
	arrive(t, qs, 6*time.Second, 0, one(), "", StateWaiting)
	got := qs.ResetDemand(t0.Add(7 * time.Second))
	want := DemandResults{Duration: 5, Average: (3*1 + 4*3 + 5*1) / 5.0, Min: 3, Max: 5}
	want.Deviation = math.Sqrt((9*1+16*3+25*1)/5.0 - want.Average*want.Average)
	if got != want {
		t.Errorf("ResetDemand at +7s = %+v, want %+v", got, want)
	}
}
