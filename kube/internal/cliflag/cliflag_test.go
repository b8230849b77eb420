package cliflag

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConcurrency(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Concurrency
		ok   bool
	}{{"auto", Concurrency{N: 7, Auto: true}, true}, {"12", Concurrency{N: 12}, true}, {"x", Concurrency{N: 7}, false}} {
		c := Concurrency{N: 7}
		err := c.Set(tc.in)
		if (err == nil) != tc.ok || c != tc.want {
			t.Errorf("Set(%q) = %v, %+v; want ok %v, %+v", tc.in, err, c, tc.ok, tc.want)
		}
	}
}

func TestSlotChanges(t *testing.T) {
	var s SlotChanges
	for _, v := range []string{"15s=4", "1m=8"} {
		if err := s.Set(v); err != nil {
			t.Fatalf("Set(%q) = %v", v, err)
		}
	}
	want := SlotChanges{{At: 15 * time.Second, Slots: 4}, {At: time.Minute, Slots: 8}}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("after Set (-want +got):\n%s", diff)
	}
	if got := s.String(); got != "15s=4,1m0s=8" {
		t.Errorf("String() = %q, want 15s=4,1m0s=8", got)
	}
	for _, bad := range []string{"15s", "x=4", "15s=0", "-1s=2", "1s=y"} {
		if err := s.Set(bad); err == nil {
			t.Errorf("Set(%q) = nil, want an error", bad)
		}
	}
}
