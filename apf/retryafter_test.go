package apf

import (
	"fmt"
	"testing"
	"time"
)

// Steps of upstream's TestDroppedRequestsTracker.
func TestRetryAfterSteps(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	tr := NewRetryAfter()
	steps := []struct {
		elapsed, dropped int
		want             int64
	}{
		{0, 5, 1}, {1, 11, 2}, {2, 1, 2}, {3, 11, 4}, {4, 1, 4}, {7, 1, 8},
		{11, 1, 8}, {15, 1, 7}, {17, 1, 6}, {21, 14, 5}, {22, 1, 10},
	}
	for _, s := range steps {
		now := start.Add(time.Duration(s.elapsed) * time.Second)
		var last int64
		for range s.dropped {
			last = tr.Record(now, "pl")
		}
		if got := tr.Get("pl"); got != s.want || last != s.want {
			t.Errorf("after %d drops at +%ds: Get = %d, Record = %d, want %d", s.dropped, s.elapsed, got, last, s.want)
		}
	}
}

// Upstream's TestDroppedRequestsTrackerPLIndependent.
func TestRetryAfterPerLevel(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tr := NewRetryAfter()
	for i := range 10 {
		tr.Record(now, fmt.Sprint("pl-", i))
	}
	now = now.Add(time.Second)
	for i := range 10 {
		if got := tr.Record(now, fmt.Sprint("pl-", i)); got != 1 {
			t.Errorf("pl-%d: Retry-After = %d, want 1", i, got)
		}
	}
	for range 5 {
		tr.Record(now, "pl-0")
	}
	now = now.Add(time.Second)
	for i := range 10 {
		want := int64(1)
		if i == 0 {
			want = 2
		}
		if got := tr.Record(now, fmt.Sprint("pl-", i)); got != want {
			t.Errorf("pl-%d: Retry-After = %d, want %d", i, got, want)
		}
	}
	if got := tr.Get("other"); got != 1 {
		t.Errorf("Get(other) = %d, want 1", got)
	}
	tr.Forget("pl-0")
	if got := tr.Get("pl-0"); got != 1 {
		t.Errorf("Get(pl-0) after Forget = %d, want 1", got)
	}
}

func TestRetryAfterCapAndHistory(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tr := NewRetryAfter()
	for s := range 200 {
		for range 200 {
			tr.Record(now.Add(time.Duration(s)*time.Second), "pl")
		}
	}
	if got := tr.Get("pl"); got != MaxRetryAfter {
		t.Errorf("Retry-After under sustained overload = %d, want %d", got, MaxRetryAfter)
	}
	if n := len(tr.levels["pl"].history); n > MaxRetryAfter+1 {
		t.Errorf("history holds %d seconds, want at most %d", n, MaxRetryAfter+1)
	}
}
