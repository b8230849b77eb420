package adapter

// Service → topology.Policy: which hints a Service's slices get.

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/fairslice/fairslice/topology"
)

// TopologyPolicy returns svc's hints policy, as topology.PolicyFor
// decides it from the Service's annotations and then its
// spec.trafficDistribution, with PreferSameZone and PreferSameNode
// enabled (Kubernetes 1.37's feature gate, locked on); and its
// trafficDistribution ("" for none).
func TopologyPolicy(svc *corev1.Service) (topology.Policy, string) {
	td := deref(svc.Spec.TrafficDistribution)
	return topology.PolicyFor(svc.Annotations, td, true), td
}
