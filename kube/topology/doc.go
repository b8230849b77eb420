// Package topology adapts k8s.io/api objects to fairslice's topology
// package: Nodes to zone capacity (NodesFromAPI), the Service's topology
// policy (PolicyForService), EndpointSlices to and from the core's slices,
// and scenario files of Kubernetes YAML documents (a Service, its Nodes and
// Pods) as the fairslice hints and route commands read them
// (ParseScenario).
//
// Pods become endpoints through the slicer's adapter, package
// kube/endpointslice (Converter.Desired), as upstream's controller builds
// them.
package topology
