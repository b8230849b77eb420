package endpointslice

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/slicer"
)

// The conversion between k8s.io/api objects and slicer values lives in
// package adapter, which does not import client-go; these names make it
// part of this package's API as well.

// NodeGetter looks nodes up by name (see adapter.NodeGetter).
type NodeGetter = adapter.NodeGetter

// Converter turns a Service's pods into slicer groups and discovery/v1
// slices into slicer slices (see adapter.Converter).
type Converter = adapter.Converter

// SkippedPodsError lists the pods Converter.Desired skipped (see
// adapter.SkippedPodsError).
type SkippedPodsError = adapter.SkippedPodsError

// Syncer plans a worker's syncs of one Service (see adapter.Syncer).
type Syncer = adapter.Syncer

// NewSyncer returns a Syncer (see adapter.NewSyncer).
func NewSyncer(opts slicer.Options) (*Syncer, error) { return adapter.NewSyncer(opts) }

// ServiceFacts returns the slicer's view of svc (see adapter.ServiceFacts).
func ServiceFacts(svc *corev1.Service, triggerTime time.Time) slicer.Service {
	return adapter.ServiceFacts(svc, triggerTime)
}

// Objects returns the discovery/v1 objects to write for plan (see
// adapter.Objects).
func Objects(plan slicer.Plan, existing []*discovery.EndpointSlice) (creates, updates, deletes []*discovery.EndpointSlice, err error) {
	return adapter.Objects(plan, existing)
}

// ToEndpointSlice returns s as a discovery/v1 object (see
// adapter.ToEndpointSlice).
func ToEndpointSlice(s slicer.Slice) *discovery.EndpointSlice { return adapter.ToEndpointSlice(s) }

// podReady reports whether pod's Ready condition is true.
func podReady(pod *corev1.Pod) bool { return adapter.PodReady(pod) }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
