// Package norapidfailfile, imported for its side effect by a package's
// tests, stops pgregory.net/rapid from writing fail files into the source
// tree (testdata/rapid/): a failing property test reports its seed, which
// replays it with -rapid.seed.
package norapidfailfile

import (
	"flag"

	_ "pgregory.net/rapid" // registers the flag set below
)

func init() {
	if err := flag.Set("rapid.nofailfile", "true"); err != nil {
		panic("norapidfailfile: " + err.Error())
	}
}
