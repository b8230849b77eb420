// Package flowcontrol is fairslice's API Priority and Fairness behind
// k8s.io/apiserver's flow-control interface
// (k8s.io/apiserver@v0.37.2 pkg/util/flowcontrol.Interface), so that an API
// server built on k8s.io/apiserver switches to it with one line:
//
//	genericConfig.FlowControl = flowcontrol.New(informerFactory, clientset.FlowcontrolV1(), serverConcurrencyLimit)
//
// New has the signature of upstream's utilflowcontrol.New; NewWithOptions
// adds what upstream cannot be told (the fairqueue Fix switches, a clock,
// the borrowing options).
//
// # Model
//
// The controller is an apf.Controller fed from the FlowSchema and
// PriorityLevelConfiguration informers. Run waits for them to sync and
// then, on every change (FlowSchema spec or status, priority level spec),
// converts the objects to flowschema types and reconfigures (levels that
// stay keep their queues and requests, removed ones drain), writes each
// FlowSchema's Dangling condition that changed with server-side apply as
// upstream's field manager (forced, at most 5 writes per FlowSchema and
// minute, as upstream), and re-divides the concurrency every 10 s
// (Options.AdjustPeriod) until stopped.
//
// The objects are used as the informers deliver them, without the v1
// defaults, as upstream's controller uses them (apf.Options.AsStored;
// apf.New, for objects from files, defaults them unless told not to).
// Objects an API server stored are defaulted already; ones that no API
// server saw, as a fake clientset holds them, behave as in upstream's
// controller: queues 0 admits up to the level's limit without queuing, a
// queuing section with no limitResponse.type queues without flows,
// negative queues admit without limit, matchingPrecedence 0 matches
// first, an unset lendablePercent lends nothing.
//
// Handle classifies the request, calls noteFn with the informers' own
// objects (so the filter's X-Kubernetes-PF-FlowSchema-UID and
// -PriorityLevel-UID headers carry their real UIDs; upstream's bootstrap
// objects for mandatory ones the informers lack), then the work estimator,
// queues the request in its level's fair queue set (queueNoteFn(true) on
// entering a queue, queueNoteFn(false) on leaving it), and runs execFn in
// the caller's goroutine once dispatched, returning after it (seats are
// given back even if execFn panics). The context's deadline is the wait
// limit, which upstream's filter sets.
//
// Install adds upstream's three debug endpoints (dump_priority_levels,
// dump_queues, dump_requests) to the server's mux; WatchTracker and
// MaxSeatsTracker are upstream's own implementations, the max seats set
// from the levels' limits. Metrics are written through upstream's
// k8s.io/apiserver/pkg/util/flowcontrol/metrics functions and ratioed
// gauges, so /metrics shows the same apiserver_flowcontrol_* series.
//
// # Checked against upstream
//
// kube/verify/compare/apf's TestDifferentialInterface drives this controller and
// upstream's through the interface, each from its own fake clientset on a
// fake clock, on random request sequences with a level added or removed
// through the clientset mid-way: same FlowSchema, level and distinguisher
// (from noteFn), same states and reject reasons, same dispatch order per
// level, same debug dumps. TestDifferentialAsStored does the same with
// objects loaded undefaulted (zero and missing fields, hand sizes that
// only deal without the default 64 queues, no limitResponse.type, broken
// unions, negative queues), named cases and random ones, and also
// compares every level's max seats and nominal, lower and upper limits.
// kube/verify/e2e runs kube-apiserver with it.
//
// # Differences from upstream
//
//   - Where upstream's controller crashes on objects that skipped the API
//     server's defaulting and validation, this one does not: a Limited
//     level without nominalConcurrencyShares (upstream dereferences nil)
//     gets the default 30; a queuing section with queues 0 and hand size
//     0 (upstream divides by the hand size) gets the max seats of a hand
//     of 1; a level whose type is neither Limited nor Exempt is ignored;
//     and an unknown distinguisher method means none. Everything else
//     such objects carry is used as upstream uses it.
//   - The work estimator is called for exempt requests too, as upstream's
//     code does (its interface comment says it is not).
//   - A request whose context has already ended is rejected (time-out)
//     without entering a queue, and requests queue per level, not under
//     one controller-wide lock (package apf's documented differences).
//   - apiserver_flowcontrol_request_queue_length_after_enqueue is not
//     sampled for requests rejected as queue-full, and
//     apiserver_flowcontrol_epoch_advance_total is not written (apf's
//     virtual-time epoch cannot underflow).
//   - The wait and execution durations (request_wait_duration_seconds,
//     request_execution_seconds, the filter's queue-wait latency and the
//     HTTP log's apf_execution_time) are apf's: from the request's arrival
//     in its queue set to its dispatch, and from dispatch to Finish, with
//     the clock readings apf takes anyway. Upstream's Handle reads its
//     clock around StartRequest and execFn instead, so its durations also
//     hold the moments in between (well under a microsecond for a request
//     dispatched at once; for one woken from a queue, its goroutine's
//     wake-up).
//   - If noteFn's object has just been deleted by a concurrent
//     reconfiguration, noteFn gets an object carrying only its name; if
//     the request's level was dropped between classification and queuing
//     (a quiescing level going idle at that moment), the request is
//     classified again and noteFn and the estimator are called again.
package flowcontrol
