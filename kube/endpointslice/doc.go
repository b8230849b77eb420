// Package endpointslice connects package slicer to k8s.io/api: it turns
// a Service, the pods its selector matches, the nodes and the existing
// EndpointSlices into the slicer's inputs, and a plan back into
// discovery/v1 objects ready to send with client-go. Together they are
// the EndpointSlice controller's reconciler (k8s.io/endpointslice v0.37.2)
// as a deterministic function that a controller calls from its sync
// handler:
//
//	var conv endpointslice.Converter            // one per worker
//	core, _ := slicer.NewReconciler(slicer.Options{})
//	desired, podErr := conv.Desired(svc, pods, nodeLister)
//	plan, err := core.Reconcile(endpointslice.ServiceFacts(svc, triggerTime), desired, conv.Existing(slices))
//	creates, updates, deletes := endpointslice.Objects(plan, slices)
//
// Pods become endpoints exactly as upstream's reconciler builds them
// (which pods count, ports resolved by named target port, the hostname
// rule, the zone from the node, conditions from readiness and deletion),
// with one deliberate difference: an unparsable pod IP is reported as an
// error and left out, where upstream publishes the literal address
// "<nil>" that the API server then rejects. kube/compare/slicer checks the
// whole path against upstream's Reconciler with a fake clientset.
//
// A Converter remembers the objects it converted by pointer (informer
// objects are immutable), so a sync in which nothing changed converts
// nothing; see Converter. A Syncer wraps a Converter and a
// slicer.Reconciler and also remembers the last sync that planned no
// writes, so that the same objects again (in any order) are answered with
// one map lookup per pod and per slice, without running the slicer:
//
//	s, _ := endpointslice.NewSyncer(slicer.Options{}) // one per worker
//	plan, skipped, err := s.Plan(endpointslice.ServiceFacts(svc, triggerTime), svc, pods, nodeLister, slices)
package endpointslice
