package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fairslice/fairslice/slicer/propagation"
)

const propagationUsage = `Usage:
  fairslice propagation --pods P --nodes N [--svg FILE] [--html FILE]

Propagation simulates a rolling update of a Service with P pods watched by
N nodes and prints, for one Endpoints object, slices of 100 and slices of
1, the writes and the bytes written and sent to watchers, sized as the API
server encodes the objects (protobuf; JSON in parentheses), and the pod
count at which one Endpoints object passes etcd's default 1.5 MiB request
limit. KEP-0752's estimates used P = 20000, N = 5000 and P = 20, N = 10.
--svg and --html draw the same numbers for 1, 2, 5, 10, ... pods up to P.

Exit status: 0 success or help, 2 bad command line.

Flags:
`

// runPropagation implements "fairslice propagation".
func runPropagation(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice propagation", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pods := fs.Int("pods", 20000, "pods (endpoints) of the Service, 1..1000000")
	nodes := fs.Int("nodes", 5000, "nodes watching the endpoints, 1..1000000")
	pic := addPictureFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), propagationUsage)
		fs.PrintDefaults()
	}
	rest, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if len(rest) != 0 {
		fmt.Fprintf(stderr, "fairslice propagation: unexpected argument %q\n", rest[0])
		return exitUsage
	}
	r, err := propagation.Simulate(propagation.Config{Pods: *pods, Nodes: *nodes})
	if err != nil {
		fmt.Fprintf(stderr, "fairslice propagation: %v\n", err)
		return exitUsage
	}
	if err := r.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "fairslice propagation: %v\n", err)
		return exitFailure
	}
	return pic.drawPropagation(r, stderr)
}
