package apf

import (
	"context"
	"testing"
	"time"
)

func TestWaitContext(t *testing.T) {
	t0 := time.Now()
	cases := []struct {
		deadline time.Duration // 0: none
		def      time.Duration
		want     time.Duration
	}{
		{0, DefaultRequestWaitLimit, 15 * time.Second},
		{0, 2 * time.Minute, time.Minute},
		{40 * time.Second, DefaultRequestWaitLimit, 10 * time.Second},
		{10 * time.Minute, DefaultRequestWaitLimit, time.Minute},
	}
	for _, c := range cases {
		ctx := context.Background()
		cancel := context.CancelFunc(func() {})
		if c.deadline > 0 {
			ctx, cancel = context.WithDeadline(ctx, t0.Add(c.deadline))
		}
		wctx, wcancel := waitContext(ctx, t0, c.def)
		if d, _ := wctx.Deadline(); !d.Equal(t0.Add(c.want)) {
			t.Errorf("waitContext(deadline +%v, default %v): wait deadline +%v, want +%v", c.deadline, c.def, d.Sub(t0), c.want)
		}
		wcancel()
		cancel()
	}
	done, dcancel := context.WithCancel(context.Background())
	dcancel()
	if got, _ := waitContext(done, t0, time.Second); got != done {
		t.Errorf("waitContext of an ended context returned a new context")
	}
}
