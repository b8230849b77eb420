// Package apf is Kubernetes API Priority and Fairness (APF) for any Go
// HTTP server: it classifies requests by FlowSchema into priority levels
// and flows, queues them fairly per priority level, admits them or answers
// 429, re-divides the server's concurrency among the levels every 10
// seconds, and shows its state through upstream's debug endpoints.
//
// # Model
//
// A Controller is built from FlowSchemas and PriorityLevelConfigurations
// (package flowschema; nil means upstream's bootstrap configuration) and a
// server concurrency limit in seats. Each priority level has one fair
// queue set (package fairqueue) whose concurrency limit comes from the
// level's share of the server (flowschema.ComputeLimits) and from the
// periodic borrowing adjustment (flowschema.Borrow), which the controller
// runs every 10 s on its Clock until Close, as upstream does
// (Options.AdjustPeriod; ManualAdjustment leaves it to the caller's
// AdjustBorrowing). The adjustment is what gives seats to a level that has
// none: at a small server concurrency a level that may lend all its seats
// starts at 0 and serves nothing until an adjustment sees its demand, so a
// request waits up to one period there (Options.AdjustOnStarvation, in
// StandaloneOptions, adjusts at once instead).
//
// A request's path: its attributes (RequestInfo; ParseRequestInfo reads
// Kubernetes API paths) and user are classified to a FlowSchema, a level
// and a flow; its work is estimated in seats (WorkEstimator: lists by the
// object counts an ObjectCounter supplies, mutations by the number of
// interested watches, at least 1 seat, at most the level's maximum); it
// waits in its level's queue set until dispatched, or is rejected
// (queue-full, concurrency-limit, or time-out when its wait limit passes or
// its client goes away); then it executes holding its seats, and Finish
// gives them back. Controller.Wait and Ticket.Finish are that path without
// HTTP; Controller.Handler is the net/http middleware.
//
// Reconfigure replaces the configuration at run time. Levels that stay
// keep their queues and requests; a removed level keeps draining with its
// concurrency (quiescing, shown by dump_priority_levels) and is dropped
// when idle; requests are never lost.
//
// # Mapping to Kubernetes
//
// Controller is upstream's APF config controller
// (k8s.io/apiserver/pkg/util/flowcontrol) with the configuration passed in
// rather than read from the API; Handler is its WithPriorityAndFairness
// filter (pkg/server/filters): long-running requests other than watches
// bypass it (DefaultLongRunning is kube-apiserver's check), watches hold
// their seats only until SignalWatchInitialized, a rejection gets 429
// "Too many requests, please try again later." with the Retry-After of
// upstream's dropped-requests tracker (RetryAfter), and every classified
// response carries X-Kubernetes-PF-FlowSchema-UID and
// X-Kubernetes-PF-PriorityLevel-UID. The wait limit is upstream's: a
// quarter of the time to the request's deadline, at most a minute, 15 s
// without a deadline. The debug handlers write upstream's three text
// formats. kube/compare/apf checks, against upstream's controller on a
// fake clock, that the same requests get the same FlowSchema, priority
// level, distinguisher, queue, dispatch order and rejection reasons and
// the same debug dumps.
//
// Metrics: an Observer receives the events upstream's metrics are made of
// (kube/apfmetrics turns them into Prometheus metrics under upstream's
// names). An Observer that also implements DispatchObserver gets the
// virtual-time statistics of every dispatch and the attempts that found
// too few seats; one that implements WatchCountObserver gets the watch
// counts of mutating requests' estimates. Controller.Stats gives R and the
// epoch advances of every level at any time.
//
// # Defaults
//
// New and Reconfigure apply the v1 defaults to the objects first, as the
// API server does when they are created, since objects from files omit
// what has a default (queues, hand size, queue length limit,
// matchingPrecedence, shares). Upstream's controller never defaults: it
// uses what its informers deliver, which an API server has defaulted
// already. Options.AsStored takes the objects as given instead, for
// objects read from an API server or a clientset; kube/flowcontrol, the
// drop-in for upstream's controller, sets it, so objects that skipped the
// API server (a fake clientset's) behave there as in upstream's. See
// package flowschema's Defaults.
//
// # Deliberate differences
//
//   - A configuration is taken as a cluster holds it, not as upstream's
//     controller alone would digest it: New and Reconfigure default the
//     objects, refuse what the API server's validation refuses, and add
//     the mandatory objects a configuration lacks before resolving
//     references (in a cluster the API server has created them), so a
//     FlowSchema naming the exempt level works without the level.
//     Options.Lenient restores the controller-alone behaviour
//     (kube/compare/apf uses it, so that both sides see the same objects)
//     and Options.AsStored turns the defaulting off.
//   - Refusals after Shutdown begins, or after Close, are upstream's
//     shutting-down answer (429, Retry-After 5) with the PF headers.
//   - Beyond upstream and off by default: Options.AdjustOnStarvation and
//     the fixes StandaloneOptions turns on.
//   - Configuration files carry no UIDs, so the response headers carry a
//     UID derived from the object's kind and name (stable across servers).
//   - A request whose context has already ended is rejected (time-out)
//     without entering a queue; upstream may still run it.
//   - One lock per priority level instead of one read-write lock around
//     the whole controller, and no goroutine per watch: a request costs
//     about a twentieth of upstream's Handle, without allocating
//     (BENCHMARKS.md).
//   - Debug dumps list levels in name order (upstream: map order for
//     dump_queues and dump_requests).
//   - Wait-limit expiries and client cancellations are counted apart
//     (fairqueue.Counts.WaitLimitExpired, CallerCancelled); upstream's
//     totals and the time-out reason are unchanged.
//   - The Retry-After state of a priority level is dropped with the level.
//
// The fair-share caveat is upstream's: queues, not flows, compete fairly,
// so a flow with many requests in flight spreads over its whole hand of
// queues and gets up to HandSize queues' shares (see BENCHMARKS.md).
package apf
