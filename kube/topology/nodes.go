package topology

import (
	"fmt"

	"github.com/fairslice/fairslice/topology"
	corev1 "k8s.io/api/core/v1"
)

// NodesFromAPI converts Nodes to the core's nodes, as upstream's
// TopologyCache.SetNodes reads them: the zone label, allocatable CPU in
// millicores (rounded up), the Ready condition, and the control-plane and
// master role labels. A negative allocatable CPU is an error naming the
// node.
func NodesFromAPI(nodes []*corev1.Node) ([]topology.Node, error) {
	out := make([]topology.Node, 0, len(nodes))
	for _, n := range nodes {
		cpu := n.Status.Allocatable.Cpu()
		if cpu.Sign() < 0 {
			return nil, fmt.Errorf("node %q: status.allocatable.cpu: negative quantity %s", n.Name, cpu.String())
		}
		_, cp := n.Labels["node-role.kubernetes.io/control-plane"]
		_, master := n.Labels["node-role.kubernetes.io/master"]
		out = append(out, topology.Node{
			Name:         n.Name,
			Zone:         n.Labels[corev1.LabelTopologyZone],
			MilliCPU:     cpu.MilliValue(),
			Ready:        nodeReady(n),
			ControlPlane: cp || master,
		})
	}
	return out, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PolicyForService returns the topology policy of svc as the EndpointSlice
// controller of Kubernetes 1.37 decides it, with the PreferSame traffic
// distributions enabled when preferSame is set.
func PolicyForService(svc *corev1.Service, preferSame bool) topology.Policy {
	td := ""
	if svc.Spec.TrafficDistribution != nil {
		td = *svc.Spec.TrafficDistribution
	}
	return topology.PolicyFor(svc.Annotations, td, preferSame)
}
