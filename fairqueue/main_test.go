package fairqueue

import (
	"flag"
	"os"
	"testing"
)

// TestMain lengthens rapid's state-machine runs (default 30 steps), which
// are too short to reach deep queue states, unless -rapid.steps is given.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.steps" })
	if !set {
		_ = flag.Set("rapid.steps", "300")
	}
	os.Exit(m.Run())
}
