// Command tour prints the headline result of each fairslice package, one
// section per package. Run it with
//
//	go run ./examples/tour
//
// Everything it prints is computed when it runs, deterministically.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	w := os.Stdout
	fmt.Fprintln(w, "fairslice tour: the headline result of each package")
	for _, s := range sections {
		fmt.Fprintf(w, "\n== %s ==\n\n", s.title)
		if err := s.run(w); err != nil {
			fmt.Fprintf(os.Stderr, "tour: %s: %v\n", s.title, err)
			os.Exit(1)
		}
	}
	fmt.Fprintln(w, "\nPictures of these results: README.md, section Pictures (docs/img/*.svg); draw your own with\n`fairslice simulate|propagation|hints|odds --svg FILE` (go run ./tools/cmd/fairslice in kube/).")
}

// sections lists the tour in order; each package adds one.
var sections = []struct {
	title string
	run   func(io.Writer) error
}{
	{"shufflesharding: how rarely a noisy flow can squish a quiet one", shuffleShardingSection},
	{"fairqueue: what quiet users get next to a noisy one", fairQueueSection},
	{"flowschema: where requests go, and how many seats each level gets", flowSchemaSection},
	{"apf: a real HTTP server under a noisy tenant, with and without APF", apfSection},
	{"slicer: what EndpointSlices save when a big Service rolls", slicerSection},
	{"topology: 11 endpoints over 3 zones, upstream's hints and ours", topologySection},
	{"slicecache: an endpoint moving between slices, as kube-proxy's cache sees it", slicecacheSection},
}
