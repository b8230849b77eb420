package simclock

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRunOrder: events run in time order, ties in scheduling order, a
// stopped one never, one scheduled by another inside the window too, and
// time never moves back for an event scheduled in the past.
func TestRunOrder(t *testing.T) {
	start := time.Unix(100, 0)
	c := New(start)
	var got []string
	var seen []time.Duration
	record := func(name string) func() {
		return func() { got = append(got, name); seen = append(seen, c.Now().Sub(start)) }
	}
	c.AfterFunc(2*time.Second, record("b"))
	c.AfterFunc(time.Second, record("a"))
	c.AfterFunc(2*time.Second, record("b2"))
	stopped := c.AfterFunc(time.Second, record("never"))
	if !stopped.Stop() || stopped.Stop() {
		t.Errorf("Stop = first true, then false, wanted")
	}
	c.AfterFunc(3*time.Second, func() {
		record("c")()
		c.At(start, record("past"))
		c.AfterFunc(time.Second, record("d"))
		c.AfterFunc(10*time.Second, record("late"))
	})
	settles := 0
	c.Run(start.Add(5*time.Second), func() { settles++ })
	if diff := cmp.Diff([]string{"a", "b", "b2", "c", "past", "d"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 4 * time.Second}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("times (-want +got):\n%s", diff)
	}
	if settles != len(got) {
		t.Errorf("settle ran %d times, want once per event (%d)", settles, len(got))
	}
	if now := c.Now(); !now.Equal(start.Add(5 * time.Second)) {
		t.Errorf("Now after Run = %v, want the end", now)
	}
	c.Run(start.Add(20*time.Second), nil)
	if got[len(got)-1] != "late" {
		t.Errorf("the event past the first window did not run in the second: %v", got)
	}
}
