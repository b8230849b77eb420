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
//	desired, err := conv.Desired(svc, pods, nodeLister)
//	var skipped *endpointslice.SkippedPodsError
//	if err != nil && !errors.As(err, &skipped) {
//		return err // a failure (a node lookup): write nothing, retry
//	}
//	existing, err := conv.Existing(slices)
//	if err != nil {
//		return err
//	}
//	plan, err := core.Reconcile(endpointslice.ServiceFacts(svc, triggerTime), desired, existing)
//	if err != nil {
//		return err
//	}
//	creates, updates, deletes, err := endpointslice.Objects(plan, slices)
//	// write them; report plan.Invalid; retry later if skipped != nil
//
// Only the skipped-pods error may be followed by a reconciliation: any
// other error from Desired comes with no groups, and reconciling no
// groups deletes every endpoint of the Service.
//
// Pods become endpoints exactly as upstream's reconciler builds them
// (which pods count, ports resolved by named target port, the hostname
// rule, the zone from the node, conditions from readiness and deletion),
// with one deliberate difference: an unparsable pod IP is reported as an
// error and left out, where upstream publishes the literal address
// "<nil>" that the API server then rejects. kube/verify/compare/slicer checks the
// whole path against upstream's Reconciler with a fake clientset.
//
// As upstream's controller, call this only for Services with a selector:
// a Service without one gets no slices from the EndpointSlice controller
// (its slices are written by hand or mirrored from a custom Endpoints
// object; see slicer.Mirror). Called anyway, with no pods, the plan is the
// empty placeholder slice. Slices the API server would refuse (a loopback
// pod IP, two Service ports of one name) are in the plan and listed in
// Plan.Invalid. A slice holding more endpoints than a lowered
// maxEndpointsPerSlice is never split, as upstream: it is left as it is
// while its endpoints stay the same, and when one of them changes or goes
// it is rewritten with every endpoint it still holds, above the maximum;
// only endpoints to place go to slices within it.
//
// A Converter remembers the objects it converted by pointer (informer
// objects are immutable), so a sync in which nothing changed converts
// nothing; see Converter. A Syncer wraps a Converter and a
// slicer.Reconciler and also remembers the last sync that planned no
// writes, so that the same objects again (in any order) are answered with
// one lookup per pod and per slice, without running the slicer, and a few
// replaced pods rewrite only the slices that hold them:
//
//	s, _ := endpointslice.NewSyncer(slicer.Options{}) // one per worker
//	plan, skipped, err := s.Plan(endpointslice.ServiceFacts(svc, triggerTime), svc, pods, nodeLister, slices)
//
// The conversion lives in package adapter (no client-go import) and is
// re-exported here. This package adds the controllers around it:
// NewController has the signature of upstream's
// pkg/controller/endpointslice.NewController, so a controller switches by
// changing the import, and NewControllerWithOptions adds compaction, the
// min-cross-zone allocator and hysteresis, the managed-by name, a
// Prometheus registerer and an event recorder. Both run upstream's work
// queue, batch period, stale-informer guard, trigger times, events and
// endpoint_slice_controller_* metrics. NewMirroringController does the same
// for custom Endpoints objects (EndpointsFromAPI converts them), and
// NewMirroringControllerWithOptions adds upstream's
// endpoint_slice_mirroring_controller_* metrics on a registerer. kube/verify/e2e
// runs the controller next to upstream's on real kube-apiservers.
//
// # Endpoints that are not Pods
//
// The Pod controller, the mirroring controller and the Writer are
// front-ends on one shell (applier.go, shell.go): the listing of a
// front-end's slices, the one stale-informer check and its tracker, the
// writes in upstream's order (and the one way to delete slices outside a
// plan), the changes metric, and the one key worker with its retries;
// serviceApplier adds what only the Pod controller and the Writer need
// (hints, CoalesceWrites, the endpoint_slice_* metrics). The mirroring controller writes all address types
// in one pass, as upstream's mirroring reconciler does, and has no
// trigger times (upstream's leaves the Endpoints object's
// last-change-trigger-time off the mirrored slices).
//
// Writer is the third front-end on the same shell, for sources whose
// endpoints are not Pods (virtual machines behind a selectorless
// Service, another cluster's endpoints, a mesh's registry): the caller
// computes a Service's endpoints and calls Sync; the Writer plans with
// slicer and writes as the EndpointSlice controller does, with its
// code (applier.go: hints by the Service's annotation and
// trafficDistribution, CoalesceWrites, each address type's creates,
// updates and deletes in upstream's order, the stale-informer tracker,
// the metrics and events):
//
//	w, err := endpointslice.NewWriter(client, sliceInformer, endpointslice.WriterOptions{ControllerName: "vms.example.com"})
//	groups, err := endpointslice.GroupsFrom(svc, []endpointslice.ExternalEndpoint{
//		{Addresses: []string{"192.168.1.10"}, Ports: ports, Serving: true},
//	})
//	err = w.Sync(ctx, svc, groups) // on ErrStaleInformer or a *HeldError, sync again later
//	err = w.Delete(ctx, svc)       // the source went away
//
// Its slices carry its own managed-by label (ControllerName, required,
// never kube-controller-manager's), so it and kube-controller-manager's
// controllers, or two Writers, never touch each other's slices; the
// slices are owned by the Service or by an object of the caller's
// choice (WriterOptions.Owner, a ServiceImport say). The Writer has no
// queue and no goroutine: the caller's workers call it, and retry a
// Sync refused because the informer has not yet seen the Writer's own
// writes (ErrStaleInformer), which is how a stale cache never creates
// duplicate slices. WriterController is that loop, ready-made: the
// caller implements Source (which Services, and their endpoints) and
// calls Changed; the controller queues, retries, resyncs and elects a
// leader on a Lease, so that of several replicas only one writes.
// Tests on a client-go fake clientset call
// endpointslicetest.ActAsAPIServer on it first.
package endpointslice
