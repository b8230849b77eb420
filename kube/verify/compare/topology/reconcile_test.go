package topologycompare

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairslice/fairslice/kube/internal/kubescenario"
	"github.com/fairslice/fairslice/kube/internal/upstream/upstreamtopo"
	"github.com/fairslice/fairslice/topology"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// randomScenario draws a Service (Auto annotation, a trafficDistribution,
// both or neither), nodes, and pods spread over the nodes' zones.
func randomScenario(rng *rand.Rand) *kubescenario.Scenario {
	nodes, zones := randomNodes(rng)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "svc-uid", Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	switch rng.IntN(8) {
	case 0:
	case 1:
		svc.Annotations[topology.AnnotationTopologyMode] = "Disabled"
	case 2:
		svc.Annotations[topology.AnnotationTopologyAwareHints] = "auto"
	default:
		svc.Annotations[topology.AnnotationTopologyMode] = "Auto"
	}
	if rng.IntN(3) == 0 {
		td := []string{topology.PreferClose, topology.PreferSameZone, topology.PreferSameNode, "Bogus"}[rng.IntN(4)]
		svc.Spec.TrafficDistribution = &td
	}
	byZone := map[string][]string{}
	for _, n := range nodes {
		z := n.Labels[corev1.LabelTopologyZone]
		byZone[z] = append(byZone[z], n.Name)
	}
	sc := &kubescenario.Scenario{Service: svc, Nodes: nodes}
	for i, e := range randomEndpoints(rng, zones) {
		zone := ""
		if e.Zone != nil {
			zone = *e.Zone
		}
		candidates := byZone[zone]
		if len(candidates) == 0 {
			candidates = []string{nodes[rng.IntN(len(nodes))].Name}
		}
		ready := corev1.ConditionTrue
		if e.Conditions.Ready == nil || !*e.Conditions.Ready {
			ready = corev1.ConditionFalse
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: "shop"},
			Spec:       corev1.PodSpec{NodeName: candidates[rng.IntN(len(candidates))]},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: e.Addresses[0]}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		}
		if rng.IntN(40) == 0 {
			p.DeletionTimestamp = &metav1.Time{}
		}
		sc.Pods = append(sc.Pods, p)
	}
	return sc
}

// scenarioYAML writes sc as the documents "fairslice hints" reads.
func scenarioYAML(sc *kubescenario.Scenario) ([]byte, error) {
	var docs []string
	add := func(kind string, obj any) error {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		docs = append(docs, "apiVersion: v1\nkind: "+kind+"\n"+string(b))
		return nil
	}
	if err := add("Service", sc.Service); err != nil {
		return nil, err
	}
	for _, n := range sc.Nodes {
		if err := add("Node", n); err != nil {
			return nil, err
		}
	}
	for _, p := range sc.Pods {
		if err := add("Pod", p); err != nil {
			return nil, err
		}
	}
	return []byte(strings.Join(docs, "---\n")), nil
}

// TestDifferentialReconcile reconciles random Services from no existing
// slices through upstream's Reconciler and TopologyCache and through
// fairslice (pods to endpoints, the slicer, HintPlan), and requires the
// same "fairslice hints" output, after a round trip through the scenario
// YAML that the CLI reads.
func TestDifferentialReconcile(t *testing.T) {
	s := seed(t)
	rng := rand.New(rand.NewPCG(s, 0x5e4c))
	n := *diffServices
	if testing.Short() {
		n = min(n, 50)
	}
	failures, enabled, reruns := 0, 0, 0
	for i := range n {
		sc := randomScenario(rng)
		text, err := scenarioYAML(sc)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := kubescenario.ParseHints(text)
		if err != nil {
			t.Fatalf("cluster %d: the scenario does not parse back: %v\n%s", i, err, text)
		}
		ours, err := kubescenario.RunHints(parsed, topology.Options{})
		if err != nil {
			t.Fatalf("cluster %d: fairslice: %v", i, err)
		}
		var first kubescenario.Outcome
		matched := false
		for k := range 1 + *diffRetries/8 {
			up, err := upstreamtopo.Reconcile(parsed)
			if err != nil {
				t.Fatalf("cluster %d: upstream: %v", i, err)
			}
			if k == 0 {
				first = up.Outcome
			}
			if cmp.Equal(up.Outcome, ours.Outcome) {
				matched = true
				reruns += min(k, 1)
				break
			}
		}
		if matched {
			if ours.Outcome.Enabled {
				enabled++
			}
			continue
		}
		failures++
		if failures <= 3 {
			t.Errorf("cluster %d (seed %d): hints output differs (-upstream +fairslice):\n%s", i, s, cmp.Diff(first, ours.Outcome))
			if *diffSave != "" {
				p := filepath.Join(*diffSave, fmt.Sprintf("reconcile-%d-%d.yaml", s, i))
				if err := os.WriteFile(p, text, 0o644); err != nil {
					t.Error(err)
				}
				t.Logf("saved %s (replay: fairslice hints [--upstream] %s)", p, p)
			}
		}
	}
	t.Logf("%d Services: %d with hints; %d needed an upstream rerun (map-order tie); %d mismatches", n, enabled, reruns, failures)
}
