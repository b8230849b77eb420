package norapidfailfile

import (
	"flag"
	"testing"
)

func TestFailFilesOff(t *testing.T) {
	f := flag.Lookup("rapid.nofailfile")
	if f == nil || f.Value.String() != "true" {
		t.Fatalf("flag rapid.nofailfile = %v, want true", f)
	}
}
