// Package flowschemacompare runs fairslice's flowschema package next to
// upstream Kubernetes (k8s.io/apiserver v0.37.2 pkg/util/flowcontrol, and
// k8s.io/kubernetes v1.37.2 pkg/apis/flowcontrol/validation).
//
// diff_test.go holds the differential tests:
//   - TestClassificationDifferential: random configurations (and the
//     default one) loaded into upstream's APF controller
//     (kube/internal/upstreamfs) and into flowschema.Compile; random
//     requests must get the same FlowSchema, priority level and flow
//     distinguisher. Flags -fs.seed, -fs.configs, -fs.requests, -fs.save
//     DIR. A mismatch is written as DIR/mismatch-<seed>-<n>.yaml plus
//     .jsonl, which "fairslice classify --config X.yaml [--upstream]
//     X.jsonl" replays.
//   - TestLimitsDifferential: the static limits (nominal, minimum, maximum,
//     per-request max seats) and the current limits after the controller's
//     first borrowing adjustment, read from upstream's metrics and max-seats
//     tracker, against flowschema.ComputeLimits and Borrow.
//
// bench_test.go holds the side-by-side benchmarks BenchmarkClassify
// (impl=upstream|fairslice, default configuration and a sweep over the
// number of FlowSchemas).
package flowschemacompare
