package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fairslice/fairslice/kube/internal/slicescenario"
	"github.com/fairslice/fairslice/slicer"
)

const reconcileUsage = `Usage:
  fairslice reconcile [--upstream] [--all-pods] [--max-endpoints-per-slice N] [-o text|json|yaml] SCENARIO.yaml...
  fairslice reconcile [--upstream] [--all-pods] [--max-endpoints-per-slice N] -   (read standard input)
  fairslice reconcile [--max-endpoints-per-slice N] --kubeconfig FILE --namespace NS --service NAME

Reconcile runs one EndpointSlice reconciliation and prints one JSON object:

  {"creates": 2, "updates": 1, "deletes": 0, "lengths": [2, 2, 1]}

creates, updates and deletes count the API calls Kubernetes' EndpointSlice
reconciler would issue (after recycling creates into deletes); lengths are
the endpoint counts of the Service's slices after the plan, largest first
(a placeholder slice counts as 0). -o json (or yaml) prints the same
object indented.

The file ("-" for standard input; several files, Lists and kubectl dumps
are read alike) holds one Service, its Pods, the Nodes, and the existing
EndpointSlices (those labelled with the Service's name and the
controller's name). As the controller, only the Pods in the Service's
namespace that its selector matches are used (how many were left out goes
to standard error); a Service without a selector gets no plan (the
controller leaves its slices alone). --all-pods instead takes every Pod
of the input as the Service's, whatever its namespace and labels, and
plans for a Service without a selector too: the Pods are what the
reconciler is given, as in the scenario files the kube/verify/compare/slicer
differential test writes for a mismatch (their Services have no
selector; the comment at the top gives the command). Other kinds are
reported and skipped; --service and --namespace choose among several
Services.
--kubeconfig (or --cluster) reads the Service, its namespace's Pods, the
Nodes and its EndpointSlices from a cluster instead. The
objects are defaulted as the API server stores them; apiVersion and kind
play no part, as objects from an informer carry neither.

Without --upstream the scenario runs through fairslice's kube/endpointslice
adapter and slicer package; pods it leaves out while still planning (a pod
on a missing node, an unparsable pod IP) are reported on standard error,
with exit status 0. --upstream runs k8s.io/endpointslice v0.37.2's
Reconciler with a fake clientset (which names created slices like the API
server, never reusing a name); any error it returns, even one it reports
after writing (a pod on a missing node), goes to standard error and the
exit status is 1, with the counts of what it wrote still printed.

Exit status: 0 success or help, 1 unreadable or invalid scenario or an
upstream error, 2 bad command line.

Flags:
`

// runReconcile implements "fairslice reconcile".
func runReconcile(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice reconcile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	upstream := fs.Bool("upstream", false, "run Kubernetes' own reconciler instead of fairslice's")
	maxPer := fs.Int("max-endpoints-per-slice", slicer.DefaultMaxEndpointsPerSlice, "most endpoints in a slice, 1..1000")
	var sf serviceFlags
	sf.register(fs)
	fs.BoolVar(&sf.allPods, "all-pods", false, "use every Pod of the input, unselected, even for a Service without a selector (the differential test's scenario files)")
	out := outputFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), reconcileUsage)
		fs.PrintDefaults()
	}
	rest, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if *maxPer < 1 || *maxPer > slicer.MaxMaxEndpointsPerSlice {
		fmt.Fprintf(stderr, "fairslice reconcile: --max-endpoints-per-slice: %d is out of range 1..%d\n", *maxPer, slicer.MaxMaxEndpointsPerSlice)
		return exitUsage
	}
	if refuseUpstream(stderr, "reconcile", *upstream) {
		return exitUsage
	}
	objs, err := sf.objects(stderr, "reconcile", rest, "Node", "EndpointSlice")
	if err != nil {
		return fail(stderr, "reconcile", err)
	}
	in, err := slicescenario.ReadInput(objs)
	if err != nil {
		fmt.Fprintf(stderr, "fairslice reconcile: %v\n", err)
		return exitFailure
	}
	if sf.noSelector != nil {
		// The controller leaves the slices of such a Service alone.
		fmt.Fprintf(stderr, "fairslice reconcile: %v\n", sf.noSelector)
		lengths := []int{}
		for _, s := range in.Existing {
			lengths = append(lengths, len(s.Endpoints))
		}
		slicescenario.SortDesc(lengths)
		return writeOutcome(stdout, stderr, *out, slicescenario.Outcome{Lengths: lengths})
	}
	in.MaxEndpointsPerSlice = *maxPer
	var res slicescenario.Outcome
	if *upstream {
		res, err = upstreamReconcile(in)
		if err != nil {
			// Any upstream error fails the command; the counts it
			// reached are still printed.
			if code := writeOutcome(stdout, stderr, *out, res); code != exitOK {
				return code
			}
			fmt.Fprintf(stderr, "fairslice reconcile: upstream: %v\n", err)
			return exitFailure
		}
	} else {
		var plan slicer.Plan
		res, plan, err = slicescenario.Fairslice(in)
		if err != nil && len(plan.Creates)+len(plan.Updates)+len(plan.Deletes)+len(plan.Unchanged) == 0 && res.Lengths == nil {
			fmt.Fprintf(stderr, "fairslice reconcile: %v\n", err)
			return exitFailure
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "fairslice reconcile: %v\n", err)
	}
	return writeOutcome(stdout, stderr, *out, res)
}

// writeOutcome prints reconcile's result in format out.
func writeOutcome(stdout, stderr io.Writer, out outputFormat, res slicescenario.Outcome) int {
	text := func(w io.Writer) error {
		_, err := fmt.Fprintln(w, formatOutcome(res))
		return err
	}
	if err := out.write(stdout, res, text); err != nil {
		return failure(stderr, "reconcile", err)
	}
	return exitOK
}

// formatOutcome writes the outcome in the format the command documents:
// {"creates": N, "updates": N, "deletes": N, "lengths": [N, N]}.
func formatOutcome(o slicescenario.Outcome) string {
	lengths := make([]string, len(o.Lengths))
	for i, n := range o.Lengths {
		lengths[i] = strconv.Itoa(n)
	}
	return fmt.Sprintf(`{"creates": %d, "updates": %d, "deletes": %d, "lengths": [%s]}`,
		o.Creates, o.Updates, o.Deletes, strings.Join(lengths, ", "))
}
