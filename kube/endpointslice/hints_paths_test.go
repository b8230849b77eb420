package endpointslice

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/kube/internal/fixture"
	"github.com/fairslice/fairslice/kube/internal/kubescenario"
	"github.com/fairslice/fairslice/topology"
)

// hintsResult is what both paths are compared on: the zone capacity, the
// summary the CLI prints, and each endpoint's zone hints.
type hintsResult struct {
	Capacity topology.Capacity
	Outcome  kubescenario.Outcome
	Hints    map[string][]string // first address -> ForZones
}

func hintsOf(capacity topology.Capacity, slices []*topology.Slice, events []topology.Event) hintsResult {
	r := hintsResult{Capacity: capacity, Outcome: kubescenario.Summarize(slices, events), Hints: map[string][]string{}}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.Hints != nil {
				r.Hints[e.Addresses[0]] = e.Hints.ForZones
			}
		}
	}
	return r
}

// controllerHints syncs svc through the controller: capacity from the
// node informer (updateCapacity), then SyncService.
func controllerHints(t *testing.T, svc *corev1.Service, nodes []*corev1.Node, pods []*corev1.Pod) hintsResult {
	t.Helper()
	objs := []runtime.Object{svc.DeepCopy()}
	for _, n := range nodes {
		objs = append(objs, n.DeepCopy())
	}
	for _, p := range pods {
		objs = append(objs, p.DeepCopy())
	}
	f := newCtlFixture(t, ControllerOptions{}, objs...)
	f.c.updateCapacity(context.Background())
	if err := f.c.SyncService(context.Background(), svc.Namespace+"/"+svc.Name); err != nil {
		t.Fatalf("SyncService = %v, want nil", err)
	}
	var slices []*topology.Slice
	for _, s := range f.slices() {
		slices = append(slices, adapter.SliceFromAPI(&s))
	}
	var events []topology.Event
	for len(f.recorder.Events) > 0 {
		typ, rest, _ := strings.Cut(<-f.recorder.Events, " ")
		reason, msg, _ := strings.Cut(rest, " ")
		events = append(events, topology.Event{Type: typ, Reason: reason, Message: msg})
	}
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	return hintsOf(f.c.capacity, slices, events)
}

// cliHints runs the same objects as fairslice hints does.
func cliHints(t *testing.T, svc *corev1.Service, nodes []*corev1.Node, pods []*corev1.Pod) hintsResult {
	t.Helper()
	sc := &kubescenario.Scenario{Service: svc.DeepCopy()}
	for _, n := range nodes {
		sc.Nodes = append(sc.Nodes, n.DeepCopy())
	}
	for _, p := range pods {
		sc.Pods = append(sc.Pods, p.DeepCopy())
	}
	run, err := kubescenario.RunHints(sc, topology.Options{})
	if err != nil {
		t.Fatalf("RunHints = %v, want nil", err)
	}
	if run.Problems != nil {
		t.Fatalf("RunHints problems = %v, want none", run.Problems)
	}
	return hintsOf(run.Capacity, run.Slices, run.Events)
}

// TestControllerAndCLIAgreeOnHints feeds the same Nodes, Service and Pods
// through the controller (informers, updateCapacity, SyncService) and
// through the CLI's path (kubescenario.RunHints), for nodes upstream's
// topology cache treats specially (negative, zero or missing CPU, not
// ready, no zone, control plane) and each policy annotation and
// trafficDistribution; the capacity, the summary and every hint must be
// equal.
func TestControllerAndCLIAgreeOnHints(t *testing.T) {
	base := []*corev1.Node{fixture.Node("a", "zone-a", "4"), fixture.Node("b", "zone-b", "4"), fixture.Node("c", "zone-c", "2")}
	extra := func(name string, mutate func(*corev1.Node)) []*corev1.Node {
		n := fixture.Node(name, "zone-b", "8")
		mutate(n)
		return append(append([]*corev1.Node{}, base...), n)
	}
	nodeSets := []struct {
		name  string
		nodes []*corev1.Node
	}{
		{"three zones", base},
		{"negative CPU", extra("neg", func(n *corev1.Node) { n.Status.Allocatable = fixture.Node("", "", "-2").Status.Allocatable })},
		{"zero CPU", extra("zero", func(n *corev1.Node) { n.Status.Allocatable = fixture.Node("", "", "0").Status.Allocatable })},
		{"missing CPU", extra("nocpu", func(n *corev1.Node) { n.Status.Allocatable = nil })},
		{"not ready", extra("down", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse })},
		{"no Ready condition", extra("unknown", func(n *corev1.Node) { n.Status.Conditions = nil })},
		{"missing zone", extra("nozone", func(n *corev1.Node) { delete(n.Labels, corev1.LabelTopologyZone) })},
		{"control plane without zone", extra("cp", func(n *corev1.Node) {
			delete(n.Labels, corev1.LabelTopologyZone)
			n.Labels["node-role.kubernetes.io/control-plane"] = ""
		})},
	}
	td := func(v string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Spec.TrafficDistribution = &v }
	}
	annotate := func(k, v string) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Annotations = map[string]string{k: v} }
	}
	policies := []struct {
		name   string
		mutate func(*corev1.Service)
	}{
		{"no policy", func(*corev1.Service) {}},
		{"topology-mode Auto", annotate(topology.AnnotationTopologyMode, "Auto")},
		{"topology-aware-hints auto", annotate(topology.AnnotationTopologyAwareHints, "auto")},
		{"topology-mode Disabled", annotate(topology.AnnotationTopologyMode, "Disabled")},
		{"PreferClose", td(topology.PreferClose)},
		{"PreferSameZone", td(topology.PreferSameZone)},
		{"PreferSameNode", td(topology.PreferSameNode)},
	}
	var pods []*corev1.Pod
	for i := range 12 {
		pods = append(pods, fixture.Pod("web", i, i != 5, string(rune('a'+i%3))))
	}
	enabled, reasons := 0, map[string]bool{}
	for _, ns := range nodeSets {
		for _, p := range policies {
			svc := fixture.Service("web", p.mutate)
			ctl := controllerHints(t, svc, ns.nodes, pods)
			cli := cliHints(t, svc, ns.nodes, pods)
			if diff := cmp.Diff(ctl, cli, cmp.AllowUnexported(topology.Capacity{})); diff != "" {
				t.Errorf("%s, %s: controller and CLI differ (-controller +cli):\n%s", ns.name, p.name, diff)
			}
			if ctl.Outcome.Enabled {
				enabled++
			}
			reasons[ctl.Outcome.Reason] = true
		}
	}
	// The cases must reach hints both on and off with a reason, or
	// equality would say little.
	if enabled == 0 || len(reasons) < 2 {
		t.Errorf("%d cases with hints, reasons %v; want some hints and a reason for none", enabled, reasons)
	}
}
