package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/slicer/propagation"
)

const sweepUsage = `Usage:
  fairslice sweep --pods P --nodes N [--pattern rolling-update --surge S]
  fairslice sweep --pods P --nodes N --pattern random-churn [--rate R --duration D --batch-period B]

Sweep plays a churn of a Service's pods with every max-endpoints-per-slice
from 1 to 1000 and prints, for a selection of sizes (every size with
--all), the slice objects each watcher holds, the bytes of a full list per
watcher, the writes, the watch events, and the bytes written and sent to
the N watchers (protobuf; JSON in parentheses), sized as the API server
encodes the objects. It marks the size that sends the fewest bytes and the
default, 100. A rolling update replaces every pod once, S per sync; random
churn replaces R random pods per second for D, the controller syncing once
per batch period (0: every replacement on its own).

-o json (or yaml): {"pods", "nodes", "pattern", "replacements", "syncs",
"minSent", "default", "rows": [{"maxEndpointsPerSlice", "slices",
"listBytes", "writes", "watchEvents", "written", "sent"}]}, one row per size
shown (every size with --all); byte counts are {"protobuf", "json"}.

Exit status: 0 success or help, 2 bad command line.

Flags:
`

// runSweep implements "fairslice sweep".
func runSweep(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c propagation.SweepConfig
	fs.IntVar(&c.Pods, "pods", 10000, "pods (endpoints) of the Service, 1..1000000")
	fs.IntVar(&c.Nodes, "nodes", 5000, "nodes watching the endpoints, 1..1000000")
	pattern := fs.String("pattern", "rolling-update", "rolling-update or random-churn")
	fs.IntVar(&c.Surge, "surge", 1, "rolling update: pods replaced per sync")
	fs.Float64Var(&c.Rate, "rate", 1, "random churn: pods replaced per second")
	fs.DurationVar(&c.Duration, "duration", 0, "random churn: how long (0: 1h)")
	fs.DurationVar(&c.BatchPeriod, "batch-period", 0, "random churn: the controller's --endpoint-updates-batch-period")
	fs.Uint64Var(&c.Seed, "seed", 0, "which pods are replaced")
	all := fs.Bool("all", false, "print every size from 1 to 1000")
	out := outputFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), sweepUsage)
		fs.PrintDefaults()
	}
	rest, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if len(rest) != 0 {
		fmt.Fprintf(stderr, "fairslice sweep: unexpected argument %q\n", rest[0])
		return exitUsage
	}
	switch *pattern {
	case "rolling-update":
		c.Pattern = propagation.RollingUpdate
	case "random-churn":
		c.Pattern = propagation.RandomChurn
	default:
		fmt.Fprintf(stderr, "fairslice sweep: --pattern: %q is not rolling-update or random-churn\n", *pattern)
		return exitUsage
	}
	s, err := propagation.SweepSizes(c)
	if err != nil {
		fmt.Fprintf(stderr, "fairslice sweep: %v\n", err)
		return exitUsage
	}
	sizes := s.ShownSizes()
	if *all {
		sizes = sizes[:0]
		for i := range s.Rows {
			sizes = append(sizes, i+1)
		}
	}
	text := func(w io.Writer) error { return s.WriteTable(w, sizes) }
	if err := out.write(stdout, sweepResultOf(&s, *pattern, sizes), text); err != nil {
		fmt.Fprintf(stderr, "fairslice sweep: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// sweepRow is one row of sweep's -o json shape.
type sweepRow struct {
	MaxEndpointsPerSlice int  `json:"maxEndpointsPerSlice"`
	Slices               int  `json:"slices"`
	ListBytes            size `json:"listBytes"`
	Writes               int  `json:"writes"`
	WatchEvents          int  `json:"watchEvents"`
	Written              size `json:"written"`
	Sent                 size `json:"sent"`
}

// sweepResult is sweep's -o json shape.
type sweepResult struct {
	Pods         int        `json:"pods"`
	Nodes        int        `json:"nodes"`
	Pattern      string     `json:"pattern"`
	Replacements int        `json:"replacements"`
	Syncs        int        `json:"syncs"`
	MinSent      int        `json:"minSent"`
	Default      int        `json:"default"`
	Rows         []sweepRow `json:"rows"`
}

func sweepResultOf(s *propagation.Sweep, pattern string, sizes []int) sweepResult {
	res := sweepResult{Pods: s.Config.Pods, Nodes: s.Config.Nodes, Pattern: pattern, Replacements: s.Replacements,
		Syncs: s.Syncs, MinSent: s.MinSent, Default: slicer.DefaultMaxEndpointsPerSlice, Rows: []sweepRow{}}
	for _, per := range sizes {
		r := s.Rows[per-1]
		p, j := s.Sent(r)
		res.Rows = append(res.Rows, sweepRow{MaxEndpointsPerSlice: per, Slices: r.Slices, ListBytes: sizeOf(r.ListBytes),
			Writes: r.Writes, WatchEvents: r.Writes * s.Config.Nodes, Written: sizeOf(r.Written), Sent: size{p, j}})
	}
	return res
}
