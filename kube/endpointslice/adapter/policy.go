package adapter

// Service → topology.Policy: which hints a Service's slices get.

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/fairslice/fairslice/topology"
)

// PolicyForService returns svc's topology policy as the EndpointSlice
// controller of Kubernetes 1.37 decides it (the topology-mode annotation,
// else spec.trafficDistribution, with the PreferSame distributions
// enabled), and the trafficDistribution it read ("" when unset).
func PolicyForService(svc *corev1.Service) (topology.Policy, string) {
	td := deref(svc.Spec.TrafficDistribution)
	return topology.PolicyFor(svc.Annotations, td, true), td
}
