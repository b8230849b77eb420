// Package fleetlease is a fleet.Store (package apf/fleet of the core
// module) over coordination.k8s.io/v1 Leases: the replicas of a fleet
// coordinate API Priority and Fairness through the API server a cluster
// already runs, as kube-apiserver's own identity leases do.
//
// Each replica writes one Lease in the Store's namespace, named
// "<fleet>-<replica>" and labelled LabelFleet=<fleet>, holding its latest
// fleet.Summary as JSON in the AnnotationSummary annotation (at most
// MaxSummaryBytes: the lightest flows are left out until it fits), its
// name in spec.holderIdentity and the time of the write in
// spec.renewTime. Read lists the fleet's Leases by label. One write (a
// get and an update, or a create) and one list per replica per period.
//
// The renew time is informational: readers never compare clocks (a
// summary carries its own period counter), and a replica whose Lease
// stops changing is forgotten by the readers' fleet.Exchange. Leases of
// replicas gone for good are not deleted; they are ignored once stale,
// and an operator (or the Lease's owner reference, set by the caller)
// removes them.
package fleetlease
