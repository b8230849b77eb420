// Package flowschema is Kubernetes API Priority and Fairness (APF)
// configuration: the FlowSchema and PriorityLevelConfiguration objects of
// flowcontrol.apiserver.k8s.io/v1, their defaults and validation, the
// bootstrap objects, the request classifier, and the concurrency limits
// and borrowing of the priority levels. It behaves like k8s.io/apiserver
// v0.37.2 and k8s.io/kubernetes v1.37.2 and imports neither.
//
// # Model
//
// A FlowSchema matches requests by subject (user, group, service account)
// and by resource or non-resource rule; the FlowSchemas are tried in
// ascending matchingPrecedence, ties broken by name, and the first match
// wins. It names a priority level and a flow distinguisher (ByUser,
// ByNamespace or none); the flow (FlowSchema name, distinguisher) is hashed
// with shufflesharding.FlowHash to pick the request's queues. A priority
// level gets a share of the server's concurrency (nominalConcurrencyShares)
// and lends and borrows seats every ten seconds according to its demand.
//
// # Use
//
// Decode reads manifests (YAML or JSON, multi-document or List), Validate
// reports every problem the API server would refuse, Compile builds an
// immutable Classifier whose Classify method answers without allocating,
// Explain says why, and Lint finds FlowSchemas that can never match,
// dangling references and unreachable levels. How a level's shares
// become seats (its limits and the borrowing between levels) is package
// seats.
//
// # Defaults
//
// Compile and Validate apply the v1 defaults to their copy first, as the
// API server does on create: right for objects written by hand or read
// from files, where an omitted field means its default. Objects read back
// from an API server already carry them, and upstream's controller uses
// what its informers deliver as it is, so objects that skipped the API
// server (a fake clientset's) behave differently there: queues 0 means no
// queuing rather than 64 queues, an empty limitResponse.type with a
// queuing section queues without flows, matchingPrecedence 0 matches
// first. CompileWith with CompileOptions.AsStored, and ValidateAsStored,
// take the objects as given; kube/flowcontrol (objects from informers)
// uses them, apf.New (objects from files) does not unless
// apf.Options.AsStored is set.
//
// # Upstream mapping
//
//   - Types, defaults, validation: k8s.io/api flowcontrol/v1 types.go,
//     k8s.io/kubernetes pkg/apis/flowcontrol/v1/defaults.go and
//     pkg/apis/flowcontrol/validation.
//   - Bootstrap objects: k8s.io/apiserver pkg/apis/flowcontrol/bootstrap.
//   - Matching: pkg/util/flowcontrol/rule.go; order, dangling references,
//     mandatory objects, fallback and flow computation: apf_controller.go
//     (digestFlowSchemasLocked, startRequest). Like upstream, a FlowSchema
//     whose level is missing is skipped, and the check happens before the
//     missing mandatory levels are added, so a FlowSchema naming an exempt
//     or catch-all level the configuration lacks is dangling. The
//     distinguisher and hash are computed only for non-exempt levels that
//     queue with more than one queue.
//
// # Differences
//
//   - Upstream matches by a linear scan over FlowSchemas, rules and
//     subjects; Classifier indexes the rules by user, group,
//     service-account namespace, verb, resource and API group and verifies
//     candidates in order, which gives the same answer (property-tested
//     against a linear reference matcher).
//   - Where upstream's controller panics — duplicate FlowSchema names, a
//     priority level whose type is neither Limited nor Exempt — Compile
//     returns an error or ignores the level. With AsStored, a Limited
//     level without nominalConcurrencyShares (upstream dereferences nil)
//     gets the default 30 (package seats' limits count it so too).
package flowschema
