package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/fairslice/fairslice/topology"
	corev1 "k8s.io/api/core/v1"
)

const routeUsage = `Usage:
  fairslice route --node NAME [--upstream] [--min-cross-zone] [-o text|json|yaml] SCENARIO.yaml...
  fairslice route --node NAME --kubeconfig FILE --namespace NS --service NAME

Route reconciles the scenario's Service as "fairslice hints" does and
prints the endpoints kube-proxy (v1.37.2) on node NAME would send the
Service's traffic to, and why: whether zone or node hints narrow the
cluster endpoints or are ignored (and for what reason), the Local
endpoints under internalTrafficPolicy or externalTrafficPolicy Local, and
the fallback to serving-and-terminating endpoints when none is ready.

Output, one endpoint per line after a header:

  node n1 (zone zone-a): mode PreferSameZone: every ready endpoint has a zone hint and some are for zone zone-a
  cluster 10.0.0.1 node=n1 zone=zone-a hints=zone-a
  local   10.0.0.1 node=n1 zone=zone-a hints=zone-a

-o json (or yaml): {"node", "zone", "mode", "why", "clusterTerminating",
"localTerminating", "cluster": [ENDPOINT], "local": [ENDPOINT]} with
ENDPOINT {"addresses", "node", "zone", "hints": {"forZones", "forNodes"}};
"cluster" and "local" are null when not applicable.

The input, the selection of Pods and --kubeconfig are as for "fairslice
hints".

Exit status: 0 success or help, 1 unreadable or invalid scenario or an
unknown node, 2 bad command line.

Flags:
`

// runRoute implements "fairslice route".
func runRoute(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice route", flag.ContinueOnError)
	fs.SetOutput(stderr)
	node := fs.String("node", "", "the node whose kube-proxy to show (required)")
	upstream := fs.Bool("upstream", false, "reconcile with Kubernetes' own reconciler and topology cache")
	minCross := fs.Bool("min-cross-zone", false, "use fairslice's min-cross-zone allocator for Auto hints")
	var sf serviceFlags
	sf.register(fs)
	out := outputFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), routeUsage)
		fs.PrintDefaults()
	}
	files, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if *node == "" {
		fmt.Fprintln(stderr, "fairslice route: --node is required\nRun 'fairslice route --help' for usage.")
		return exitUsage
	}
	if refuseUpstream(stderr, "route", *upstream) {
		return exitUsage
	}
	sc, code := loadScenario("route", files, &sf, stderr)
	if sc == nil {
		return code
	}
	n := findNode(sc.Nodes, *node)
	if n == nil {
		fmt.Fprintf(stderr, "fairslice route: node %q is not in the input\n", *node)
		return exitFailure
	}
	var opts topology.Options
	if *minCross {
		opts.Allocator = topology.AllocatorMinCrossZone
	}
	_, slices, code := reconcileScenario("route", sc, *upstream, opts, stderr)
	if code != exitOK {
		return code
	}
	res, text := routeOf(sc.Service, n, slices)
	if err := out.write(stdout, res, text); err != nil {
		return failure(stderr, "route", err)
	}
	return exitOK
}

// findNode returns the node called name, or nil.
func findNode(nodes []*corev1.Node, name string) *corev1.Node {
	var n *corev1.Node
	for _, x := range nodes {
		if x.Name == name {
			n = x
		}
	}
	return n
}

// routeOf selects the endpoints of the Service's final slices that
// node n's kube-proxy uses, and returns the -o json result and the text
// writer.
func routeOf(svc *corev1.Service, n *corev1.Node, slices []*topology.Slice) (routeResult, func(io.Writer) error) {
	var eps []topology.Endpoint
	for _, s := range slices {
		eps = append(eps, s.Endpoints...)
	}
	policy := topology.TrafficPolicy{
		InternalLocal: svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
		ExternalLocal: svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal,
		External:      externallyAccessible(svc),
	}
	zone := n.Labels[corev1.LabelTopologyZone]
	sel := topology.SelectEndpoints(eps, policy, n.Name, zone)
	mode := sel.Mode
	if mode == "" {
		mode = "none"
	}
	res := routeResult{Node: n.Name, Zone: zone, Mode: mode, Why: sel.Why,
		ClusterTerminating: sel.ClusterTerminating, LocalTerminating: sel.LocalTerminating,
		Cluster: routeEndpoints(eps, sel.Cluster), Local: routeEndpoints(eps, sel.Local)}
	return res, routeText(n.Name, zone, mode, sel, eps)
}

// routeText writes the selection sel of eps as route's text output.
func routeText(node, zone, mode string, sel topology.Selection, eps []topology.Endpoint) func(io.Writer) error {
	return func(w io.Writer) error {
		fmt.Fprintf(w, "node %s (zone %s): mode %s: %s\n", node, orDash(zone), mode, sel.Why)
		if sel.ClusterTerminating {
			fmt.Fprintln(w, "cluster endpoints fall back to serving-and-terminating endpoints: none is ready")
		}
		if sel.LocalTerminating {
			fmt.Fprintln(w, "local endpoints fall back to serving-and-terminating endpoints: none is ready")
		}
		if sel.Cluster != nil && len(sel.Cluster) == 0 {
			fmt.Fprintln(w, "cluster (none)")
		}
		for _, i := range sel.Cluster {
			fmt.Fprintf(w, "cluster %s\n", describeEndpoint(&eps[i]))
		}
		if sel.Local != nil && len(sel.Local) == 0 {
			fmt.Fprintln(w, "local   (none)")
		}
		for _, i := range sel.Local {
			fmt.Fprintf(w, "local   %s\n", describeEndpoint(&eps[i]))
		}
		return nil
	}
}

// routeResult is the -o json shape of route.
type routeResult struct {
	Node               string          `json:"node"`
	Zone               string          `json:"zone"`
	Mode               string          `json:"mode"`
	Why                string          `json:"why"`
	ClusterTerminating bool            `json:"clusterTerminating"`
	LocalTerminating   bool            `json:"localTerminating"`
	Cluster            []routeEndpoint `json:"cluster"`
	Local              []routeEndpoint `json:"local"`
}

type routeEndpoint struct {
	Addresses []string    `json:"addresses"`
	Node      string      `json:"node"`
	Zone      string      `json:"zone"`
	Hints     *routeHints `json:"hints"`
}

type routeHints struct {
	ForZones []string `json:"forZones"`
	ForNodes []string `json:"forNodes"`
}

func routeEndpoints(eps []topology.Endpoint, idx []int) []routeEndpoint {
	if idx == nil {
		return nil
	}
	out := []routeEndpoint{}
	for _, i := range idx {
		e := &eps[i]
		r := routeEndpoint{Addresses: e.Addresses, Node: e.NodeName, Zone: e.Zone}
		if e.Hints != nil {
			r.Hints = &routeHints{ForZones: e.Hints.ForZones, ForNodes: e.Hints.ForNodes}
		}
		out = append(out, r)
	}
	return out
}

// externallyAccessible reports whether kube-proxy would apply the Service's
// externalTrafficPolicy: a port with a node port, an external IP, or a
// load-balancer ingress IP in VIP mode (the default when no mode is set).
// Unlike kube-proxy it does not look at address families: an IPv6-only
// external IP counts for an IPv4 proxy too.
func externallyAccessible(svc *corev1.Service) bool {
	if len(svc.Spec.ExternalIPs) > 0 {
		return true
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			return true
		}
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" && (ing.IPMode == nil || *ing.IPMode == corev1.LoadBalancerIPModeVIP) {
			return true
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func describeEndpoint(e *topology.Endpoint) string {
	hints := "-"
	if e.Hints != nil {
		var parts []string
		if len(e.Hints.ForZones) > 0 {
			parts = append(parts, strings.Join(e.Hints.ForZones, ","))
		}
		if len(e.Hints.ForNodes) > 0 {
			parts = append(parts, "node:"+strings.Join(e.Hints.ForNodes, ","))
		}
		hints = strings.Join(parts, " ")
	}
	return fmt.Sprintf("%s node=%s zone=%s hints=%s", strings.Join(e.Addresses, ","), orDash(e.NodeName), orDash(e.Zone), hints)
}
