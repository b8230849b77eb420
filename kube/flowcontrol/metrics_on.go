//go:build !fairslice_measure_nometrics

package flowcontrol

// upstreamMetrics is true in every build but the measurement-only
// fairslice_measure_nometrics one, which BENCHMARKS.md uses to measure
// what the mandatory calls of upstream's metrics functions cost. It is
// not a behaviour option: a build without upstream's metrics is not a
// drop-in.
const upstreamMetrics = true
