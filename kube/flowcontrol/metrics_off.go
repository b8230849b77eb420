//go:build fairslice_measure_nometrics

package flowcontrol

// upstreamMetrics is false in this measurement-only build: Handle and the
// observer skip upstream's metrics functions and ratioed gauges, and do
// everything else (see metrics_on.go).
const upstreamMetrics = false
