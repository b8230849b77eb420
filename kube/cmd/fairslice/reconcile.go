package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/fairslice/fairslice/kube/internal/slicescenario"
	"github.com/fairslice/fairslice/slicer"
)

const reconcileUsage = `Usage:
  fairslice reconcile [--upstream] [--max-endpoints-per-slice N] SCENARIO.yaml
  fairslice reconcile [--upstream] [--max-endpoints-per-slice N] -   (read standard input)

Reconcile runs one EndpointSlice reconciliation and prints one JSON object:

  {"creates": 2, "updates": 1, "deletes": 0, "lengths": [2, 2, 1]}

creates, updates and deletes count the API calls Kubernetes' EndpointSlice
reconciler would issue (after recycling creates into deletes); lengths are
the endpoint counts of the Service's slices after the plan, largest first
(a placeholder slice counts as 0).

The file holds Kubernetes YAML documents separated by "---": one Service,
the Pods its selector matches, the Nodes, and the existing EndpointSlices
(those labelled with the Service's name and the controller's name). The
objects are defaulted as the API server stores them; apiVersion and kind
play no part, as objects from an informer carry neither.

Without --upstream the scenario runs through fairslice's kube/endpointslice
adapter and slicer package. --upstream runs k8s.io/endpointslice v0.37.2's
Reconciler with a fake clientset. Problems that the reconciler reports
while still writing a plan (a pod on a missing node, and in fairslice an
unparsable pod IP) go to standard error; the exit status is then 0.

Exit status: 0 success or help, 1 unreadable or invalid scenario, 2 bad
command line.

Flags:
`

// runReconcile implements "fairslice reconcile".
func runReconcile(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice reconcile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	upstream := fs.Bool("upstream", false, "run Kubernetes' own reconciler instead of fairslice's")
	maxPer := fs.Int("max-endpoints-per-slice", slicer.DefaultMaxEndpointsPerSlice, "most endpoints in a slice, 1..1000")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), reconcileUsage)
		fs.PrintDefaults()
	}
	rest, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, "fairslice reconcile: want exactly one scenario file")
		fs.Usage()
		return exitUsage
	}
	if *maxPer < 1 || *maxPer > slicer.MaxMaxEndpointsPerSlice {
		fmt.Fprintf(stderr, "fairslice reconcile: --max-endpoints-per-slice: %d is out of range 1..%d\n", *maxPer, slicer.MaxMaxEndpointsPerSlice)
		return exitUsage
	}
	if refuseUpstream(stderr, "reconcile", *upstream) {
		return exitUsage
	}
	var data []byte
	var err error
	if rest[0] == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(rest[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "fairslice reconcile: %v\n", err)
		return exitFailure
	}
	in, err := slicescenario.ParseScenario(data)
	if err != nil {
		fmt.Fprintf(stderr, "fairslice reconcile: %s: %v\n", rest[0], err)
		return exitFailure
	}
	in.MaxEndpointsPerSlice = *maxPer
	var out slicescenario.Outcome
	if *upstream {
		out, err = upstreamReconcile(in)
	} else {
		var plan slicer.Plan
		out, plan, err = slicescenario.Fairslice(in)
		if err != nil && len(plan.Creates)+len(plan.Updates)+len(plan.Deletes)+len(plan.Unchanged) == 0 && out.Lengths == nil {
			fmt.Fprintf(stderr, "fairslice reconcile: %v\n", err)
			return exitFailure
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "fairslice reconcile: %v\n", err)
	}
	fmt.Fprintln(stdout, formatOutcome(out))
	return exitOK
}

// formatOutcome writes the outcome as the issue specifies it:
// {"creates": N, "updates": N, "deletes": N, "lengths": [N, N]}.
func formatOutcome(o slicescenario.Outcome) string {
	lengths := make([]string, len(o.Lengths))
	for i, n := range o.Lengths {
		lengths[i] = strconv.Itoa(n)
	}
	return fmt.Sprintf(`{"creates": %d, "updates": %d, "deletes": %d, "lengths": [%s]}`,
		o.Creates, o.Updates, o.Deletes, strings.Join(lengths, ", "))
}
