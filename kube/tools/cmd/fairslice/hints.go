package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/fairslice/fairslice/kube/internal/kubescenario"

	"github.com/fairslice/fairslice/topology"
)

const hintsUsage = `Usage:
  fairslice hints [--upstream] [--min-cross-zone] [-o text|json|yaml] [--svg FILE] [--html FILE] SCENARIO.yaml...
  fairslice hints [--min-cross-zone] --kubeconfig FILE --namespace NS --service NAME

Hints reconciles a Service's EndpointSlices from no existing slices, as
kube-controller-manager v1.37 would (with the PreferSameZone and
PreferSameNode traffic distributions enabled), and prints one JSON object:

  {"enabled": true, "reason": "", "hintsByZone": {"zone-a": 4}, "crossZone": 1}

enabled is whether any ready endpoint got a zone hint; reason is upstream's
TopologyAwareHintsDisabled event message (with its ", addressType: IPv4"
suffix) when hints are off and "" when they are on; hintsByZone counts the
ready endpoints hinted for each zone (zones with none are left out, {} when
off); crossZone counts the ready endpoints hinted for a zone other than
their own.

-o json (or yaml) prints the same object indented.

SCENARIO.yaml ("-" for standard input; several files, Lists and kubectl
dumps are read alike) holds one
Service (with the service.kubernetes.io/topology-mode annotation or
spec.trafficDistribution), its Nodes (the topology.kubernetes.io/zone
label, status.allocatable.cpu, the Ready condition) and its Pods
(spec.nodeName, status.podIPs, the Ready condition). As the controller,
only the Pods in the Service's namespace that its selector matches are
used (how many were left out goes to standard error), and a Service
without a selector gets no slices (exit status 1). Other kinds are
reported and skipped; --service and --namespace choose among several
Services. --kubeconfig (or --cluster) reads the Service, its namespace's
Pods and the Nodes from a cluster instead. Pods left out of the
endpoints are listed on standard error.

--upstream runs Kubernetes' own reconciler and topology cache
(k8s.io/endpointslice v0.37.2) on the same file. --min-cross-zone uses
fairslice's allocator that keeps the most traffic in its zone within the
overload threshold (Auto mode only). --svg and --html draw, per zone, the
ready endpoints, the share expected from allocatable CPU with the 20%
overload band, and the hints, for upstream's allocator (Kubernetes' code
with --upstream) beside the min-cross-zone one, and any reason hints are off.

Exit status: 0 success or help, 1 unreadable or invalid scenario (every
problem is listed, naming the document, object and field), 2 bad command
line.

Flags:
`

// scenarioName names the scenario of files for pictures: the file, or
// "cluster" when it was read from one.
func scenarioName(files []string) string {
	if len(files) == 0 {
		return "cluster"
	}
	return files[0]
}

// loadScenario reads the scenario of hints and route: from files (or
// "-") or the cluster, the Service, the Pods it selects and the Nodes.
func loadScenario(cmd string, files []string, sf *serviceFlags, stderr io.Writer) (*kubescenario.Scenario, int) {
	objs, err := sf.objects(stderr, cmd, files, "Node")
	if err != nil {
		return nil, fail(stderr, cmd, err)
	}
	sc, err := kubescenario.ReadHints(objs)
	if err != nil {
		fmt.Fprintf(stderr, "fairslice %s: %v\n", cmd, err)
		return nil, exitFailure
	}
	if sf.noSelector != nil {
		return nil, failure(stderr, cmd, sf.noSelector)
	}
	return sc, exitOK
}

// reconcileScenario runs the scenario through fairslice or upstream and
// returns the outcome and the final slices.
func reconcileScenario(cmd string, sc *kubescenario.Scenario, upstream bool, opts topology.Options, stderr io.Writer) (kubescenario.Outcome, []*topology.Slice, int) {
	if upstream {
		out, slices, rerr, err := upstreamHints(sc)
		if err != nil {
			fmt.Fprintf(stderr, "fairslice %s: upstream: %v\n", cmd, err)
			return kubescenario.Outcome{}, nil, exitFailure
		}
		if rerr != nil {
			fmt.Fprintf(stderr, "fairslice %s: upstream reconciler: %v\n", cmd, rerr)
		}
		return out, slices, exitOK
	}
	run, err := kubescenario.RunHints(sc, opts)
	if err != nil {
		fmt.Fprintf(stderr, "fairslice %s: %v\n", cmd, err)
		return kubescenario.Outcome{}, nil, exitFailure
	}
	if run.Problems != nil {
		fmt.Fprintf(stderr, "fairslice %s: pods left out of the endpoints:\n%v\n", cmd, run.Problems)
	}
	return run.Outcome, run.Slices, exitOK
}

// runHints implements "fairslice hints".
func runHints(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice hints", flag.ContinueOnError)
	fs.SetOutput(stderr)
	upstream := fs.Bool("upstream", false, "run Kubernetes' own reconciler and topology cache instead of fairslice's")
	minCross := fs.Bool("min-cross-zone", false, "use fairslice's min-cross-zone allocator for Auto hints")
	var sf serviceFlags
	sf.register(fs)
	out := outputFlag(fs)
	pic := addPictureFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), hintsUsage)
		fs.PrintDefaults()
	}
	files, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if *upstream && *minCross {
		fmt.Fprintln(stderr, "fairslice hints: --upstream and --min-cross-zone exclude each other")
		return exitUsage
	}
	if refuseUpstream(stderr, "hints", *upstream) {
		return exitUsage
	}
	sc, code := loadScenario("hints", files, &sf, stderr)
	if sc == nil {
		return code
	}
	var opts topology.Options
	if *minCross {
		opts.Allocator = topology.AllocatorMinCrossZone
	}
	res, _, code := reconcileScenario("hints", sc, *upstream, opts, stderr)
	if code != exitOK {
		return code
	}
	text := func(w io.Writer) error {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	if err := out.write(stdout, res, text); err != nil {
		return failure(stderr, "hints", err)
	}
	return pic.drawHints(scenarioName(files), sc, *upstream, stderr)
}
