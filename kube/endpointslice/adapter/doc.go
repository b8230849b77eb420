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
// It imports k8s.io/api and k8s.io/apimachinery but not client-go, so a
// program that only plans (the fairslice CLI) stays small. Package
// endpointslice, which holds the controllers, re-exports the Converter,
// Syncer and Objects names; most users import that one.
package adapter
