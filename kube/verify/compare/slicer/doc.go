// Package slicercompare compares fairslice's slicer (through the
// kube/endpointslice adapter) with upstream's EndpointSlice reconciler,
// k8s.io/endpointslice v0.37.2 driven with a fake clientset.
//
// TestDifferential runs random scenarios (existing slices of random fill,
// pod churn, port changes, dual-stack, foreign owners, placeholders,
// deprecated address types, max endpoints per slice 1..1000) through both
// and requires identical create, update and delete counts and identical
// sorted final slice lengths. The seed is logged; replay with -diff.seed
// or SLICER_DIFF_SEED, run more with -diff.scenarios. A mismatch is
// written as a scenario file (-diff.save DIR) that "fairslice reconcile
// --all-pods" and "fairslice reconcile --all-pods --upstream" replay (the
// generated Services have no selector; the Pods are given as they are).
//
// The benchmarks put the two side by side (impl=upstream, impl=fairslice);
// compare with benchstat -col /impl. BenchmarkRealisticNoOpFloor puts
// upstream next to impl=floor, the least work any no-op sync without
// memory does on the realistic fixture (floorCheck): the highest ratio a
// fresh Converter could reach on the machine it runs on.
package slicercompare
