package fairqueue

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

// TestMain lengthens rapid's state-machine runs (default 30 steps), which
// are too short to reach deep queue states, unless -rapid.steps is given,
// and fails the package if any goroutine (a Limiter's timer, a waiter) is
// left running after the tests.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.steps" })
	if !set {
		_ = flag.Set("rapid.steps", "300")
	}
	goleak.VerifyTestMain(m)
}
