// Package adapter converts between k8s.io/api objects and the slicer's
// values: Pods, a Service and Nodes into slicer groups (Converter), existing
// discovery/v1 EndpointSlices into slicer slices, a slicer plan back into
// the objects to write (Objects), and a worker's repeated syncs (Syncer).
// For topology it converts Nodes into zone capacity (NodesFromAPI,
// CapacityFromAPI), a Service into its topology policy (PolicyForService)
// and EndpointSlices into topology's slices (SliceFromAPI,
// EndpointFromAPI). The controller and the fairslice CLI both call these,
// so "fairslice hints" shows what the controller does.
//
// Each file holds one step:
//
//	service.go      Service → slicer.Service (ServiceFacts)
//	policy.go       Service → topology.Policy (PolicyForService)
//	nodes.go        Nodes → zone capacity (NodesFromAPI, CapacityFromAPI, NodeReady)
//	nodelookup.go   Node → existence and zone of a pod's node (lookupNode)
//	converter.go    pods → desired groups, remembered between calls (Converter.Desired)
//	podendpoint.go  Pod → slicer.Endpoint per address type (Converter.convert)
//	ports.go        Service ports → a pod's port set (Converter.portsOf)
//	ip.go           pod IPs → canonical addresses (Converter.canonicalIP)
//	groups.go       endpoints → groups per address type and port set
//	existing.go     EndpointSlices → slicer slices (Converter.Existing)
//	endpoint.go     discovery/v1 Endpoint → slicer.Endpoint (EndpointFromAPI, SliceFromAPI)
//	objects.go      slicer plan → EndpointSlices to write (Objects)
//	sync.go, incremental.go  a worker's repeated syncs of one Service (Syncer)
//
// It imports k8s.io/api and k8s.io/apimachinery but not client-go, so a
// program that only plans (the fairslice CLI) stays small. Package
// endpointslice, which holds the controllers, re-exports the Converter,
// Syncer and Objects names; most users import that one.
package adapter
