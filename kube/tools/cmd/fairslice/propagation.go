package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fairslice/fairslice/slicer/propagation"
)

const propagationUsage = `Usage:
  fairslice propagation --pods P --nodes N [-o text|json|yaml] [--svg FILE] [--html FILE]

Propagation simulates a rolling update of a Service with P pods watched by
N nodes and prints, for one Endpoints object, slices of 100 and slices of
1, the writes and the bytes written and sent to watchers, sized as the API
server encodes the objects (protobuf; JSON in parentheses), and the pod
count at which one Endpoints object passes etcd's default 1.5 MiB request
limit. KEP-0752's estimates used P = 20000, N = 5000 and P = 20, N = 10.
--svg and --html draw the same numbers for 1, 2, 5, 10, ... pods up to P.

-o json (or yaml): {"pods", "nodes", "designs": [{"name", "perObject",
"objectSize", "createWrites", "createBytes", "updateBytes",
"rollingWrites", "rollingBytes", "rollingSent"}], "etcdLimitPods"}, where
every size is {"protobuf": N, "json": N} and rollingSent is rollingBytes
times the nodes.

Exit status: 0 success or help, 2 bad command line.

Flags:
`

// runPropagation implements "fairslice propagation".
func runPropagation(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice propagation", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pods := fs.Int("pods", 20000, "pods (endpoints) of the Service, 1..1000000")
	nodes := fs.Int("nodes", 5000, "nodes watching the endpoints, 1..1000000")
	out := outputFlag(fs)
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
	if err := out.write(stdout, propagationResultOf(r), r.WriteTable); err != nil {
		fmt.Fprintf(stderr, "fairslice propagation: %v\n", err)
		return exitFailure
	}
	return pic.drawPropagation(r, stderr)
}

// size is a byte count in both encodings, in propagation's -o json shape.
type size struct {
	Protobuf float64 `json:"protobuf"`
	JSON     float64 `json:"json"`
}

func sizeOf(s propagation.Size) size { return size{float64(s.Protobuf), float64(s.JSON)} }

type propagationDesign struct {
	Name          string `json:"name"`
	PerObject     int    `json:"perObject"`
	ObjectSize    size   `json:"objectSize"`
	CreateWrites  int    `json:"createWrites"`
	CreateBytes   size   `json:"createBytes"`
	UpdateBytes   size   `json:"updateBytes"`
	RollingWrites int    `json:"rollingWrites"`
	RollingBytes  size   `json:"rollingBytes"`
	RollingSent   size   `json:"rollingSent"`
}

// propagationResult is the -o json shape of propagation.
type propagationResult struct {
	Pods          int                 `json:"pods"`
	Nodes         int                 `json:"nodes"`
	Designs       []propagationDesign `json:"designs"`
	EtcdLimitPods size                `json:"etcdLimitPods"`
}

func propagationResultOf(r propagation.Report) propagationResult {
	res := propagationResult{Pods: r.Config.Pods, Nodes: r.Config.Nodes, EtcdLimitPods: sizeOf(r.EtcdLimitPods)}
	for _, d := range r.Designs {
		p, j := r.Sent(d.RollingBytes)
		res.Designs = append(res.Designs, propagationDesign{Name: d.Name, PerObject: d.PerObject, ObjectSize: sizeOf(d.ObjectSize),
			CreateWrites: d.CreateWrites, CreateBytes: sizeOf(d.CreateBytes), UpdateBytes: sizeOf(d.UpdateBytes),
			RollingWrites: d.RollingWrites, RollingBytes: sizeOf(d.RollingBytes), RollingSent: size{p, j}})
	}
	return res
}
