// Package flowschemacompare runs fairslice's flowschema package next to
// upstream Kubernetes (k8s.io/apiserver v0.37.2 pkg/util/flowcontrol, and
// k8s.io/kubernetes v1.37.2 pkg/apis/flowcontrol/validation).
//
// diff_test.go holds the differential tests:
//   - TestClassificationDifferential: random configurations (and the
//     default one) loaded into upstream's APF controller
//     (kube/internal/upstream/upstreamfs) and into flowschema.Compile; random
//     requests must get the same FlowSchema, priority level and flow
//     distinguisher. Flags -fs.seed, -fs.configs, -fs.requests, -fs.save
//     DIR. A mismatch is written as DIR/mismatch-<seed>-<n>.yaml plus
//     .jsonl, which "fairslice classify --config X.yaml [--upstream]
//     X.jsonl" replays.
//   - TestLimitsDifferential: the static limits (nominal, minimum, maximum,
//     per-request max seats) and the current limits after the controller's
//     first borrowing adjustment, read from upstream's metrics and max-seats
//     tracker, against seats.ComputeLimits and Borrow.
//   - TestBorrowingGolden: rounds of demand through all three regimes of
//     the periodic adjustment. Upstream's computeConcurrencyAllocation and
//     updateBorrowingLocked are unexported and the controller drives them
//     only from a real-time 10-second loop, so testdata/gen-borrowing.sh
//     runs them inside a scratch copy of k8s.io/apiserver (adding the test
//     file testdata/upstream_borrowing_test.go.txt) and records inputs and
//     results in testdata/borrowing.golden.json, which this test replays.
//   - TestValidationDifferential: random valid and broken objects through
//     k8s.io/kubernetes v1.37.2 pkg/apis/flowcontrol/validation (after
//     upstream's v1 defaulting and conversion to the internal types; see
//     kube/verify/internal/upstreamvalidation) and through flowschema's
//     validation: the same errors, type and field path (and detail, except
//     the wording of name-format and unsupported-value messages).
//
// bootstrap_test.go checks the mandatory and suggested objects, in order,
// against k8s.io/apiserver pkg/apis/flowcontrol/bootstrap.
//
// bench_test.go holds the side-by-side benchmarks BenchmarkClassify
// (impl=upstream|fairslice, default configuration and a sweep over the
// number of FlowSchemas).
package flowschemacompare
