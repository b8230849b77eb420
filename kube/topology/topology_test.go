package topology_test

import (
	"strings"
	"testing"

	ktopo "github.com/fairslice/fairslice/kube/topology"
	"github.com/fairslice/fairslice/topology"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name, zone, cpu string, ready corev1.ConditionStatus, labels map[string]string) *corev1.Node {
	if labels == nil {
		labels = map[string]string{}
	}
	if zone != "" {
		labels[corev1.LabelTopologyZone] = zone
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if cpu != "" {
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
	}
	return n
}

func TestNodesFromAPI(t *testing.T) {
	nodes := []*corev1.Node{
		node("a", "zone-a", "1500m", corev1.ConditionTrue, nil),
		node("b", "zone-b", "2", corev1.ConditionFalse, nil),
		node("cp", "zone-c", "4", corev1.ConditionTrue, map[string]string{"node-role.kubernetes.io/control-plane": ""}),
		node("m", "zone-c", "4", corev1.ConditionTrue, map[string]string{"node-role.kubernetes.io/master": "true"}),
		node("tiny", "zone-a", "1n", corev1.ConditionTrue, nil),
		node("none", "", "", "", nil),
	}
	got, err := ktopo.NodesFromAPI(nodes)
	if err != nil {
		t.Fatal(err)
	}
	want := []topology.Node{
		{Name: "a", Zone: "zone-a", MilliCPU: 1500, Ready: true},
		{Name: "b", Zone: "zone-b", MilliCPU: 2000},
		{Name: "cp", Zone: "zone-c", MilliCPU: 4000, Ready: true, ControlPlane: true},
		{Name: "m", Zone: "zone-c", MilliCPU: 4000, Ready: true, ControlPlane: true},
		{Name: "tiny", Zone: "zone-a", MilliCPU: 1, Ready: true}, // rounded up, as MilliValue does
		{Name: "none"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NodesFromAPI (-want +got):\n%s", diff)
	}
	if _, err := ktopo.NodesFromAPI([]*corev1.Node{node("neg", "z", "-1", corev1.ConditionTrue, nil)}); err == nil || !strings.Contains(err.Error(), `node "neg": status.allocatable.cpu`) {
		t.Errorf("negative CPU: err = %v", err)
	}
}

func TestParseScenarioDefaults(t *testing.T) {
	sc, err := ktopo.ParseScenario([]byte(`# a comment
kind: Service
metadata: {name: web}
---
---
kind: Pod
metadata: {name: p}
`))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Service.Namespace != "default" || sc.Pods[0].Namespace != "default" {
		t.Errorf("namespaces %q, %q; want default", sc.Service.Namespace, sc.Pods[0].Namespace)
	}
	_, err = ktopo.ParseScenario([]byte("kind: Service\nmetadata: {name: a}\n---\nkind: Service\nmetadata: {name: b}\n---\nkind: Node\nmetadata: {}\n"))
	for _, want := range []string{`document 2 (Service "b"): a second Service (the first is "a")`, "document 3 (Node): metadata.name: missing"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseScenario error %v, want it to contain %q", err, want)
		}
	}
}
