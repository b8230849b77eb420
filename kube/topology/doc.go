// Package topology adapts k8s.io/api objects to fairslice's topology
// package: Nodes to zone capacity (NodesFromAPI), the Service's topology
// policy (PolicyForService), EndpointSlices to and from the core's slices,
// and scenario files of Kubernetes YAML documents (a Service, its Nodes and
// Pods) as the fairslice hints and route commands read them
// (ParseScenario).
//
// Pods become endpoints through PodsToGroups, which follows upstream's
// EndpointSlice controller for what matters to topology (which pods count,
// their ready condition and their zone from their node); it resolves ports
// simply (see its doc) because hints do not depend on ports.
package topology
