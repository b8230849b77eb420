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
// level's share of the server (seats.ComputeLimits) and from the
// periodic borrowing adjustment (seats.Borrow), which the controller
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
// # Where seats are decided
//
// A level's seats change in one place, Controller.planLocked (plan.go):
// it reads every level's configuration, demand statistics and limit in
// force, asks two policies, computes a seats.Plan with seats.Compute (a
// pure function: static limits from the shares, the borrowing, the
// overrides within each level's bounds) and applies it (applyLocked: the
// limits, each queue set's concurrency limit, the Observer). The policies:
//
//   - the total: Options.ServerConcurrencyLimit, or with Options.Adaptive
//     the adaptive total (see Total);
//   - the overrides: Options.SeatPolicy's CurrentLimits (package
//     apf/fleet's Coordinator gives a fleet's level limits); nil leaves
//     every level to the borrowing.
//
// A plan is made on a configuration change (Reconfigure, and when a
// quiescing level is dropped), at the periodic adjustment (AdjustBorrowing,
// which first folds the period's demand in; every Options.AdjustPeriod, or
// at once for a starving level with Options.AdjustOnStarvation), when the
// adaptive total moves, and on Replan (a SeatPolicy that changed its
// mind). Limits shows the plan in force, each level's Borrowed (the
// borrowing's limit) beside its Current; Total the total; the dump_seats
// debug endpoint both.
//
// The request path calls one internal admission hook (hook.go) at
// arrival, waiting, dispatch, rejection and finish; Options.FlowLimiter
// and Options.Adaptive implement it, and a controller with neither runs a
// hook that does nothing. At arrival the hook may also hold a request
// outside the queue set (a NewHoldingFlowLimiter's cap): the request then
// waits as a queued one does (its context, Close and its wait time as
// for a queued request; LevelDump.Held counts it) until the hook hands it
// to the queue set or rejects it.
//
// # Adaptive total
//
// Off by default (Options.Adaptive nil): the total is then the static
// ServerConcurrencyLimit and every decision is upstream's (the golden
// decision traces in testdata/decisions.golden hold for it). With
// Options.Adaptive the total
// follows latency, measured by the controller itself: the execution time
// (dispatch to Finish) of each request, per priority level, on the
// controller's Clock (not of requests finished with
// Ticket.FinishAbandoned, as Handler finishes those whose client has gone:
// cut short, they measure the client's patience, not the server), and
// optionally the Go runtime's scheduling latency
// (AdaptiveOptions.SchedulerLatencyTarget). Revisions run every
// AdaptiveOptions.Interval (DefaultAdaptiveInterval, 100 ms), triggered by
// a request arriving or finishing (no goroutine or timer of its own), and
// use a window only once it holds MinSamples executions
// (DefaultAdaptiveMinSamples, 10).
//
// The latency signal of a level's window ("Low") is the mean of its
// fastest AdaptiveLatencyKept (90%) executions, read from a sketch of
// log-spaced buckets (16 per power of two, so to within 6.25%; adding a
// sample is O(1) and allocates nothing). Leaving the slowest tenth out
// makes the signal blind to stalls that hit a few requests (a descheduled
// process, a late timer), any one of which would otherwise end slow start
// and halve the total.
// It is a trimmed mean, not a low quantile, because a quantile misses
// queueing that delays only some requests: a backend whose slots free up
// together serves a quarter of the requests at once with the total at
// 1.75 times its slots, so a p25 signal settled there. The rule
// (gradient.go):
//
//  1. Probe. Start at the floor and wait until no limited level executes
//     more seats than its limit (the work admitted earlier has left); each
//     level's Low over the next window is its baseline, the no-load
//     latency. Re-probe every ProbeInterval (DefaultProbeInterval, 30 s),
//     then resume at the total before.
//  2. Slow start (after the first probe only). Multiply the total by
//     AdaptiveSlowStartFactor (4) each window while the latency ratio
//     stays within Tolerance and a limited level was short of seats (a
//     request waited or was rejected).
//  3. Steady. ratio = the sample-weighted mean over levels of Low /
//     baseline (a baseline follows a lower Low down); gradient =
//     clamp(Tolerance/ratio, AdaptiveMinGradient 0.5, 1), lowered to the
//     scheduler signal's target/p99 when that is over its target; target =
//     total·gradient, plus AdaptiveHeadroom·√total (0.5) when the gradient
//     is 1 and a level was short of seats; total' = total +
//     AdaptiveSmoothing·(target − total), AdaptiveSmoothing 0.25.
//  4. Bounds. The total stays within [floor, ceiling]: the floor is
//     AdaptiveOptions.Min (at least 1) and never less than what the
//     mandatory catch-all level needs to keep one seat; the ceiling is
//     AdaptiveOptions.Max, by default ServerConcurrencyLimit. Exempt
//     requests are never limited: the exempt level queues nothing and
//     ignores its limit, whatever the total.
//
// Each level's seats then follow from the total through the seat plan (see
// "Where seats are decided"), as upstream's shares prescribe, and borrowing keeps re-dividing them every
// period. backendsim simulates the rule against a backend of N slots; the
// constants were chosen there (BENCHMARKS.md, "apf: the adaptive total";
// the measurements behind each choice are in
// docs/notes/2026-12-adaptive-total-noise.md):
//   - Tolerance 1.2 (DefaultAdaptiveTolerance). The total settles at about
//     1.2 times the slots, a queue of a fifth of the slots inside the
//     backend. Under backendsim.MeasuredNoise a tolerance of 1.05 often
//     fails to settle within 5 s; between 1.1 and 1.3 the goodput is the
//     same, since it hardly depends on the total between N and 2N slots.
//     On the example server, whose requests spend time outside the
//     backend's slots, this reaches 0.84-0.90 of the best static total.
//   - Smoothing 0.25. Unsmoothed, a window over the tolerance cuts the
//     total below the slots and the headroom then overshoots, so under
//     timing noise the total settles late or not at all. Smoothed, after
//     the capacity halves the total still settles within a second.
//   - Slow start 4x. The start (probe at the floor of 1, then slow start)
//     is most of what a short run loses against the best static total;
//     the cost is one window at up to four times the slots.
//
// How it differs from its peers:
//   - Netflix concurrency-limits' Gradient2 compares a short-term with a
//     long-term (exponentially averaged) RTT and adds a fixed queue size
//     with smoothing; here the baseline is measured by
//     probing (a long-term average drifts up under sustained overload),
//     per priority level, the growth is √total, and both signals are a
//     trimmed mean rather than a mean of every sample.
//   - Vegas estimates the queue as limit·(1 − RTTnoload/RTT) from the
//     minimum RTT and moves the limit by small steps between two
//     thresholds; here the ratio of trimmed means scales the total
//     multiplicatively (smoothed), so a halving of capacity is followed
//     within a second. A minimum, like a low quantile, misses queueing that
//     spares some requests.
//   - Envoy's adaptive concurrency (gradient controller) is closest:
//     minRTT measured at a low concurrency, periodically, and
//     limit·gradient + √limit. Here the probe ends only once earlier work
//     has drained, latencies are per priority level, growth requires a
//     level short of seats, and what moves is a total divided among
//     priority levels with fair queuing, not one limit in front of one
//     upstream.
//   - CockroachDB's admission control adapts CPU slots from the Go
//     scheduler's run-queue length and latency inside one database; here
//     scheduler latency is an optional second signal and execution time
//     the first.
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
// formats. kube/verify/compare/apf checks, against upstream's controller on a
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
//     (kube/verify/compare/apf uses it, so that both sides see the same objects)
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
