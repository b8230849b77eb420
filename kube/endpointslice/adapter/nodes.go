package adapter

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/fairslice/fairslice/topology"
)

// Labels that take a node out of zone capacity, whatever their value, as
// upstream's topology cache excludes control-plane nodes.
const (
	labelControlPlane = "node-role.kubernetes.io/control-plane"
	labelMaster       = "node-role.kubernetes.io/master"
)

// NodesFromAPI converts Nodes to the topology core's nodes, reading what
// upstream's TopologyCache.SetNodes reads: the zone label, allocatable CPU
// in millicores (rounded up, as resource.Quantity.MilliValue), the Ready
// condition and the control-plane and master role labels. It refuses
// nothing, as upstream's controller does not: topology.NewCapacity decides
// what a not-ready node, a missing zone or a zero or negative CPU means.
// This is the one place where a Node becomes a zone capacity input, for
// the controller and the fairslice CLI alike. O(nodes).
func NodesFromAPI(nodes []*corev1.Node) []topology.Node {
	out := make([]topology.Node, len(nodes))
	for i, n := range nodes {
		_, cp := n.Labels[labelControlPlane]
		_, master := n.Labels[labelMaster]
		out[i] = topology.Node{
			Name:         n.Name,
			Zone:         n.Labels[corev1.LabelTopologyZone],
			MilliCPU:     n.Status.Allocatable.Cpu().MilliValue(),
			Ready:        NodeReady(n),
			ControlPlane: cp || master,
		}
	}
	return out
}

// CapacityFromAPI returns the zone capacity of nodes:
// topology.NewCapacity of NodesFromAPI.
func CapacityFromAPI(nodes []*corev1.Node) topology.Capacity {
	return topology.NewCapacity(NodesFromAPI(nodes))
}

// NodeReady reports whether n's Ready condition is True; a node without
// one is not ready.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
