// Package upstreamqs drives Kubernetes' own fair-queuing QueueSet
// (k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset, v0.37.2) as
// a scenario.Engine, so that `fairslice simulate --upstream` and the
// differential tests replay scenario files through upstream under exactly
// the rules that fairslice's own engine follows.
//
// The QueueSet runs on a custom event clock whose Now is the runner's
// current instant and whose EventAfterDuration hands the callback (a
// final-seat release) to the runner as a scheduled event, so same-instant
// releases happen in scheduling order on the caller's goroutine instead of
// in goroutines as with upstream's fake clock. Gauges are no-ops.
//
// How each observable is obtained from upstream:
//   - rejection: StartRequest returns a nil Request; the reason is
//     queue-full when the set has queues and concurrency-limit otherwise;
//   - dispatch order: the QueueNoteFn(false) calls, excluding the one made
//     while a timed-out request is being ejected; in the no-queuing and
//     exempt modes a non-nil Request is dispatched at once;
//   - the queue a request entered: a Dump(false) right after StartRequest,
//     looking for the request (its index is carried in the flow
//     distinguisher) among the waiting and executing requests of each queue;
//   - completion: Finish with an empty execute function, called at the
//     completion instant;
//   - time-out: the request's context is cancelled and Finish called, which
//     ejects it from its queue (upstream dispatches nothing as a result);
//   - reconfiguration: BeginConfigChange then Complete, with
//     ConcurrencyDenominator max(C, 1).
//
// The engine calls queueset.OnRequestDispatched for every dispatched
// request before the next event, as the APF filter does when a request
// starts executing, so that upstream's Dump counts it as Dispatched.
// Requests are named in the dump as fairqueue's scenario engine names them
// (flow schema scenario.FlowSchemaName, distinguisher the request index).
//
// For differential tests of the state between events, Engine exposes
// upstream's Dump and IsIdle, its virtual time R and robin index (read by
// reflection: upstream has no accessor), and WriteDebugText writes a dump
// in the format of the APF debug endpoints.
//
// Upstream has none of fairqueue's behaviour fixes: Start (and Reconfigure)
// return an error for a configuration that sets any of them
// (scenario.Config.Options).
//
// The Dump makes each queued arrival cost O(requests in the set) on top of
// upstream's own work: about 0.5 ms per request for a 20000-request trace
// with a backlog in the hundreds, against about 20 µs through fairqueue.
//
// New silences klog (klog.SetLogger(logr.Discard())) once per process,
// because upstream logs at error level on some legal paths and formats log
// arguments even when they are discarded.
package upstreamqs
