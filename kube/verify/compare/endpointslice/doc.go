// Package endpointslicecompare runs fairslice's EndpointSlice and
// mirroring controllers (kube/endpointslice) next to upstream's own
// (k8s.io/kubernetes v1.37.2, pkg/controller/endpointslice and
// pkg/controller/endpointslicemirroring, and k8s.io/endpointslice's
// Reconciler), each on its own fake clientset fed the same objects, and
// requires the same slices, the same metrics and no more writes. Its tests
// are all it holds; they live here, in the verification module, because
// upstream's controllers can only be built with k8s.io/kubernetes.
package endpointslicecompare

// The Prometheus subsystems of upstream's two controllers, whose metric
// families the tests compare.
const (
	metricsSubsystem   = "endpoint_slice_controller"
	mirroringSubsystem = "endpoint_slice_mirroring_controller"
)
