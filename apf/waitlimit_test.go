package apf

import (
	"context"
	"testing"
	"time"
)

func TestWaitLimit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		deadline time.Duration
		has      bool
		def      time.Duration
		want     time.Duration
	}{
		{0, false, DefaultRequestWaitLimit, 15 * time.Second},
		{0, false, 2 * time.Minute, time.Minute},
		{60 * time.Second, true, DefaultRequestWaitLimit, 15 * time.Second},
		{8 * time.Second, true, DefaultRequestWaitLimit, 2 * time.Second},
		{10 * time.Minute, true, DefaultRequestWaitLimit, time.Minute},
		{-4 * time.Second, true, DefaultRequestWaitLimit, -time.Second},
	}
	for _, c := range cases {
		if got := WaitLimit(t0, t0.Add(c.deadline), c.has, c.def); got != c.want {
			t.Errorf("WaitLimit(deadline +%v, has %v, def %v) = %v, want %v", c.deadline, c.has, c.def, got, c.want)
		}
	}
}

func TestWaitContext(t *testing.T) {
	t0 := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), t0.Add(40*time.Second))
	defer cancel()
	wctx, wcancel := waitContext(ctx, t0, DefaultRequestWaitLimit)
	defer wcancel()
	if d, _ := wctx.Deadline(); !d.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("wait deadline = %v after arrival, want 10s", d.Sub(t0))
	}
	done, dcancel := context.WithCancel(context.Background())
	dcancel()
	if got, _ := waitContext(done, t0, time.Second); got != done {
		t.Errorf("waitContext of an ended context returned a new context")
	}
}
