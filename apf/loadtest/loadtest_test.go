package loadtest

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	u := UserResult{}
	if got := u.Percentile(99); got != 0 {
		t.Errorf("Percentile of no waits = %v, want 0", got)
	}
	for i := 1; i <= 100; i++ {
		u.Waits = append(u.Waits, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := u.Percentile(c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestRunValidation(t *testing.T) {
	if _, err := Run(t.Context(), Config{}); err == nil {
		t.Error("Run(empty config) = nil error")
	}
	if _, err := Run(t.Context(), Config{URL: "http://x", Duration: time.Second, Users: []User{{Name: "a"}}}); err == nil {
		t.Error("Run(user without concurrency) = nil error")
	}
}
