// Package fairqueuecompare runs fairslice's fairqueue next to upstream
// Kubernetes' fair-queuing QueueSet (k8s.io/apiserver v0.37.2,
// pkg/util/flowcontrol/fairqueuing/queueset).
//
// bench_test.go holds side-by-side benchmarks: BenchmarkRequest/impl=upstream/*
// and BenchmarkRequest/impl=fairslice/* run the same request sequences (one op
// is one request: arrive, dispatch, finish) for immediate dispatch on an
// idle set and with 50 executing, queued dispatch with the seats full, a
// backlog of 1,000 waiting requests, and 10,000 queues. Upstream is driven
// from one goroutine with apiserver's fake event clock and no-op gauges, as
// described in driving-upstream.md §2: a request is seen to be dispatched
// through its QueueNoteFn (pre-built closures, so the driver adds no
// allocations of its own), and only dispatched requests are finished.
//
//	go test -run '^$' -bench Request -benchmem -count 6 ./verify/compare/fairqueue/ > /tmp/fq.txt
//	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da -col /impl /tmp/fq.txt
//
// diff_test.go holds the differential tests, which replay scenarios
// (package fairqueue/scenario) through upstream (kube/internal/upstream/upstreamqs)
// and through fairqueue and require the same outcome, reason, queue at
// entry, dispatch time and global dispatch order for every request, and
// (state_test.go), after every event, the same queue-set state: R, the
// robin index, each queue's next dispatch R, waiting and executing counts,
// and the text of the three APF debug endpoints (fairqueue's
// Dump.WritePriorityLevel, WriteQueues and WriteRequests against
// upstream's Dump written in apf_controller_debug.go's format by
// upstreamqs.WriteDebugText; executing requests, which upstream keeps in an
// unordered set, listed by start time then index on both sides). Upstream
// exports neither R nor the robin index; upstreamqs reads them by
// reflection.
//   - TestDifferential runs random traces; flags -diff.seed, -diff.traces
//     and -diff.save DIR (to keep minimized failing traces). The state is
//     compared in the first -diff.statetraces (200) traces, the dump text
//     in the first -diff.texttraces (50): together they triple the cost of
//     a trace (about 15 s for the default 500 traces on a busy 2-core
//     machine).
//   - TestDifferentialTestdata replays testdata/*.json, comparing the full
//     state; the upstream-panic-*.json cases must still panic upstream and
//     must not fail fairqueue. epoch-threshold.json probes R's epoch
//     advance at nanosecond resolution around the threshold (R lands 2
//     units of 1e-8 seat-seconds past it), so that a changed threshold
//     fails.
//   - FuzzDifferential compares results and states (without the text) on
//     arbitrary small scenario files.
//   - TestRandomScenarioRoundTrip checks the scenario text round trip.
package fairqueuecompare
