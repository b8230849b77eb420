package fairqueue

import "flag"

// A failing property test reports its seed (replay it with -rapid.seed);
// rapid's fail files would otherwise be written into testdata/rapid/ in the
// source tree.
func init() {
	if err := flag.Set("rapid.nofailfile", "true"); err != nil {
		panic(err)
	}
}
