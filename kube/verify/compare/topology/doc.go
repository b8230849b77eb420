// Package topologycompare runs fairslice's topology package next to
// upstream Kubernetes' topology hints (k8s.io/endpointslice v0.37.2,
// topologycache and the Reconciler that calls it).
//
// diff_test.go holds the differential tests, over random clusters from a
// logged, replayable seed (-diff.seed; -diff.clusters sets how many):
//   - TestDifferentialAddHints calls upstream's TopologyCache.SetNodes and
//     AddHints and fairslice's NewCapacity and AddHints on the same nodes
//     and plan (slices to create and update, and unchanged slices carrying
//     valid, stale, cross-zone, missing or unknown-zone hints), and
//     requires the same events (enabled or not, and why), hints per zone,
//     slices created, updated and left unchanged, and the same endpoints
//     hinted for another zone than their own. Upstream breaks ties in Go
//     map order; when the first upstream run differs, it is rerun (up to
//     -diff.retries times) and the case passes if any run matches
//     fairslice's deterministic choice. Mismatches are written to
//     -diff.save DIR as JSON, replayed by TestDifferentialReplay.
//   - TestDifferentialTrafficDistribution runs upstream's
//     trafficdist.ReconcileHints and fairslice's
//     ReconcileTrafficDistribution on the same random plans (node names,
//     stale zone and node hints) for every trafficDistribution value and
//     requires identical slices, hints included.
//   - TestDifferentialReconcile reconciles random Services (Nodes and Pods,
//     no existing slices) through upstream's Reconciler with a
//     TopologyCache and through the slicer and topology.HintPlan, and
//     compares the fairslice hints output. Mismatches are written as
//     scenario YAML that "fairslice hints" and "fairslice hints --upstream"
//     replay.
//
// bench_test.go holds side-by-side benchmarks (impl=upstream,
// impl=fairslice): BenchmarkAddHints (100 slices of 100 endpoints to
// create, 3 zones) and BenchmarkRemoveHints (one unchanged slice of N
// hinted endpoints), and BenchmarkOptions, which reports for the options
// against upstream on the same random clusters the fraction of Services
// keeping hints, the expected cross-zone fraction of traffic, the largest
// endpoint overload and slice rewrites over a churn trace:
//
//	go test -run '^$' -bench . -benchmem -count 6 ./verify/compare/topology/ > /tmp/topo.txt
//	benchstat -col /impl /tmp/topo.txt
package topologycompare
