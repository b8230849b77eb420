// Package scenario replays request traces through a fair-queuing queue set
// on a simulated clock. It defines the scenario file format read by
// "fairslice simulate", the discrete-event runner, and an Engine adapter
// over fairqueue.QueueSet; the kube module adds an Engine over upstream
// Kubernetes' QueueSet, so the same file can be run through both and the
// outputs compared line by line.
//
// # File format
//
//	{"config": {"queues": 8, "handSize": 2, "queueLengthLimit": 10, "concurrencyLimit": 1},
//	 "requests": [{"id": "A1", "arrival": "0s", "hash": 1001, "initialSeats": 1,
//	               "finalSeats": 0, "additionalLatency": "0s", "duration": "1s",
//	               "waitLimit": "0s"}],
//	 "reconfigurations": [{"at": "5s", "config": {...}}]}
//
// Durations are Go duration strings, offsets from time 0 (the earliest
// arrival need not be 0). hash is an unsigned 64-bit integer literal, read
// exactly (never through float64), or a string holding the hash in decimal
// or, with a 0x prefix, in hexadecimal as "fairslice deal" prints it
// ("hash": "0x00000000deadbeef"). duration is the execution time once
// dispatched; waitLimit 0 means no limit; initialSeats defaults to 1, and
// finalSeats, additionalLatency and waitLimit to 0. queues 0 selects the
// no-queuing mode and -1 the exempt mode; handSize and queueLengthLimit are
// required only when queues ≥ 1. Requests need not be in arrival order.
// Unknown fields, duplicate ids, negative durations and invalid
// configurations are errors. The "reconfigurations" array is an extension:
// each entry replaces the configuration at the given instant.
//
// A second extension: a config (top-level or in a reconfiguration) may set
// any of fairqueue.Config's three behaviour fixes to true (each defaults to
// false):
//   - "fixStaleQueueRemoval" (Config.FixStaleQueueRemoval): a request
//     lingering in an already removed queue does not remove another queue
//     at its release and strand that queue's waiting requests (see Output);
//   - "fixZeroLimitAdmission" (Config.FixZeroLimitAdmission): a
//     concurrency limit of 0 admits nothing;
//   - "clampFinalSeatsWithoutQueues" (Config.ClampFinalSeatsWithoutQueues):
//     the final-seats clamp applies without queues too.
//
// Each config is complete: a reconfiguration without a field turns that
// fix off. Write emits the fields only when true, so files without them
// read and write as before. Upstream has none of these options: "fairslice
// simulate --upstream" rejects scenarios that set one.
//
// # Event rules
//
// Events run in order of time. At the same instant: first completions and
// final-seat releases, in the order they were scheduled (a completion is
// scheduled when its request is dispatched, a release when its request
// completes); then wait-limit expiries, in file order (the expiry of a
// request no longer waiting does nothing); then reconfigurations, in file
// order; then arrivals, in file order. Each event, with all the dispatching
// it triggers, finishes before the next. An event scheduled for the current
// instant (a zero duration) joins the pending events under the same rules.
//
// # Output
//
// One JSON object per request, in input order:
//
//	{"id":"A1","outcome":"dispatched","reason":"","queue":1,"dispatchedAt":"0s"}
//
// outcome is "dispatched" or "rejected"; reason is "", "queue-full",
// "concurrency-limit" or "time-out"; dispatchedAt is the dispatch instant
// (time.Duration.String) or "". queue is the index of the queue the request
// entered, as of the moment it entered (queue indexes shift when upstream
// removes surplus queues after a reconfiguration), or -1 if it entered none:
// requests rejected at arrival, and those of the no-queuing and exempt modes.
// A timed-out request reports the queue it waited in.
//
// One extension: outcome "waiting" marks a request that was still waiting
// when no events remained. That happens when nothing can ever dispatch it:
// a concurrency limit of 0 with queues, or a request stranded in a queue
// that upstream's stale-index queue removal detached from the set (where
// upstream itself panics; see testdata/stale-queue-removal.json), unless
// the configuration sets fixStaleQueueRemoval.
//
// # Summary
//
// Summarize groups requests into flows by hash and reports, per flow,
// counts by outcome, the seat-seconds served (initialSeats × duration over
// dispatched requests), throughput (dispatched requests per second of the
// span from 0 to the last arrival or completion) and nearest-rank wait
// percentiles p50/p90/p99 (dispatch minus arrival). Its fairness figure is
// Jain's index over the flows' served seat-seconds, (Σx)²/(n·Σx²): 1 when
// all flows got equal service, 1/n when one flow got it all. It measures
// equality of service, so flows that asked for less lower it legitimately.
//
// # Relation to Kubernetes
//
// Kubernetes has no trace format or replay tool; the file format and the
// event rules are this package's, chosen so that a trace has exactly one
// meaning. The queue-set behaviour is the engine's. With NewEngine, results
// equal those of upstream's QueueSet (k8s.io/apiserver v0.37.2) driven under
// the same rules, request for request and in dispatch order: the kube
// module's differential test checks this over randomized traces. The one
// exception is the scenarios on which upstream panics (after its stale-index
// removal of a surplus queue detaches a queue that still holds waiting
// requests); fairqueue keeps going there.
//
// # Engines
//
// Run drives an Engine; NewEngine returns the one over fairqueue.QueueSet
// with upstream-compatible defaults. An Engine reports dispatches through
// Host.Dispatched and asks for its own timed events (final-seat releases)
// through Host.Schedule, so that releases interleave with completions in
// scheduling order exactly as upstream's event clock would deliver them on
// one goroutine.
package scenario
