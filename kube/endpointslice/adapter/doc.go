// Package adapter converts between k8s.io/api objects and the slicer's
// values: Pods, a Service and Nodes into slicer groups (Converter), existing
// discovery/v1 EndpointSlices into slicer slices, a slicer plan back into
// the objects to write (Objects), and a worker's repeated syncs (Syncer).
//
// It imports k8s.io/api and k8s.io/apimachinery but not client-go, so a
// program that only plans (the fairslice CLI) stays small. Package
// endpointslice, which holds the controllers, re-exports every name here;
// most users import that one.
package adapter
