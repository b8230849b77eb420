package adapter_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/topology"
)

func apiNode(name, zone, cpu string, ready corev1.ConditionStatus, labels map[string]string) *corev1.Node {
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

// TestNodesFromAPI: what upstream's TopologyCache.SetNodes reads of a
// Node, and nothing refused: a negative CPU passes through, as upstream's
// controller takes it, for topology.NewCapacity to judge.
func TestNodesFromAPI(t *testing.T) {
	nodes := []*corev1.Node{
		apiNode("a", "zone-a", "1500m", corev1.ConditionTrue, nil),
		apiNode("b", "zone-b", "2", corev1.ConditionFalse, nil),
		apiNode("cp", "zone-c", "4", corev1.ConditionTrue, map[string]string{"node-role.kubernetes.io/control-plane": ""}),
		apiNode("m", "zone-c", "4", corev1.ConditionTrue, map[string]string{"node-role.kubernetes.io/master": "true"}),
		apiNode("tiny", "zone-a", "1n", corev1.ConditionTrue, nil),
		apiNode("neg", "zone-b", "-1", corev1.ConditionTrue, nil),
		apiNode("none", "", "", "", nil),
	}
	got := adapter.NodesFromAPI(nodes)
	want := []topology.Node{
		{Name: "a", Zone: "zone-a", MilliCPU: 1500, Ready: true},
		{Name: "b", Zone: "zone-b", MilliCPU: 2000},
		{Name: "cp", Zone: "zone-c", MilliCPU: 4000, Ready: true, ControlPlane: true},
		{Name: "m", Zone: "zone-c", MilliCPU: 4000, Ready: true, ControlPlane: true},
		{Name: "tiny", Zone: "zone-a", MilliCPU: 1, Ready: true}, // rounded up, as MilliValue does
		{Name: "neg", Zone: "zone-b", MilliCPU: -1000, Ready: true},
		{Name: "none"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NodesFromAPI (-want +got):\n%s", diff)
	}
}
