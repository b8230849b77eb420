// Package topology decides the topology hints of a Service's
// EndpointSlices, and which endpoints a node then uses, as Kubernetes does
// (k8s.io/endpointslice v0.37.2 and kube-proxy v1.37.2), deterministically
// and in time linear in the endpoints; with options that keep more traffic
// in its zone.
//
// # Model
//
// Zones originate traffic in proportion to their allocatable CPU
// (Capacity, from the ready nodes that are not control-plane nodes;
// NewCapacity). A Service asks for hints with the topology-mode annotation
// (Auto) or spec.trafficDistribution (PolicyFor; the annotation wins):
//
//   - Auto (AddHints): with N ready endpoints, each zone should get its CPU
//     share of N, and at least ceil(share × N / 1.2) so that no endpoint
//     carries more than 20% above an even share (OverloadThreshold;
//     Allocate). If those minimums do not fit in N, or a node lacks a zone
//     or CPU, or there are fewer endpoints than zones, or a ready endpoint
//     being written has no zone, hints are off and the Result says why with
//     a typed Reason and upstream's event message. Otherwise unchanged
//     slices keep valid hints, every ready endpoint being written is hinted
//     for its own zone, and endpoints move from zones above their target to
//     zones below it under upstream's 0.5/1.0 stopping rules.
//   - PreferClose / PreferSameZone / PreferSameNode
//     (ReconcileTrafficDistribution): every ready endpoint is hinted for
//     its own zone (and node); no balancing.
//   - Otherwise hints are removed (RemoveHints).
//
// HintPlan runs this on a plan of the slicer package, per address type.
// After a node change, Capacity.Overloaded tells, from a Service's last
// HintsByZone and the new Capacity, whether its hints now overload a zone
// and the Service must be resynced (upstream's GetOverloadedServices, which
// keeps those counts in its cache; here the caller keeps them).
// SelectEndpoints is kube-proxy's side: hints are used on a node only when
// every ready endpoint has one and some name the node (or its zone);
// Local traffic policies and the fallback to serving-and-terminating
// endpoints are modelled, with conditions read as kube-proxy reads them
// (an unset ready is ready there, but not ready for the controller);
// TrafficPolicy.IgnoreNodeHints models a kube-proxy with the
// PreferSameTrafficDistribution gate off.
// Evaluate measures a set of hints in this model: expected cross-zone
// fraction of traffic and the largest endpoint overload.
//
// # Compatibility
//
// With default Options, AddHints gives upstream's events, hints per zone,
// slices created, updated and left unchanged, and endpoints moved to
// another zone; kube/verify/compare/topology checks this against upstream's
// TopologyCache on random clusters, and upstream's topology tests are
// reproduced here. Reproduced quirks: the allocation uses upstream's
// float64 expression (ceil(desired × (1/1.2)), which is one too high for
// some N, e.g. 18 over three equal zones); not-ready endpoints keep
// whatever hints they had; unchanged slices keep valid cross-zone hints;
// Capacity with one zone reports InsufficientNodeInfo.
//
// Deliberate differences: upstream breaks ties between equally loaded
// zones, and picks the zone an endpoint moves to, in Go map order; here
// ties go to the first zone in name order and moved endpoints fill the
// receiving zones in the order they were first chosen (upstream's
// likeliest order), so results are byte-stable. Upstream removes hints by
// copying a slice once per hinted endpoint (quadratic); RemoveHints copies
// it once. Hints are shared *Hints values, so hinting 10,000 endpoints
// allocates nothing per endpoint. An endpoint's zone "" means none
// (upstream's reconciler never sets an empty zone either).
//
// # Beyond upstream (options)
//
// AllocatorMinCrossZone keeps hints whenever some single-zone assignment
// keeps every endpoint within the overload threshold (using the exact
// minimum ceil(5·share·N/6), not upstream's float), moves only the
// endpoints a zone below its minimum needs (from the zones with the most
// to spare, endpoints without a capacity zone first), so that its
// cross-zone traffic is the least any single-zone assignment within the
// threshold allows; keeps unchanged slices' hints while they are still
// needed; and clears hints of not-ready endpoints. When no single-zone
// assignment fits (11 endpoints over three equal zones), it tries every
// grouping of up to 6 zones into groups whose endpoints are hinted for all
// zones of the group, and keeps the feasible grouping with the least
// expected cross-zone traffic. That is a heuristic: hint sets that overlap
// without forming groups can do a little better (30% instead of 33% for
// the 11-endpoint case, found by exhaustive search), and are not tried. Hysteresis, with it,
// keeps hints (and existing hints) while the overload stays within
// OverloadThreshold+Hysteresis once a Service has them, so that hints do
// not flap as pods come and go. ZoneRouting is Envoy's zone-aware routing
// as a pure function, for comparison: per-zone routing probabilities that
// deliver every zone exactly its share and keep the most traffic local.
//
// All functions are pure: no goroutines, no clock, no global state. They
// are not safe for concurrent use on the same SliceInfo.
package topology
