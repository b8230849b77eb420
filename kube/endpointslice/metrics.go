package endpointslice

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fairslice/fairslice/slicer"
)

// metricsSubsystem is upstream's subsystem: every metric is named
// endpoint_slice_controller_<name>.
const metricsSubsystem = "endpoint_slice_controller"

// controllerMetrics are upstream's EndpointSlice controller metrics
// (k8s.io/endpointslice/metrics v0.37.2: names, help, labels, buckets) on
// a registry the caller chose. A nil *controllerMetrics records nothing.
type controllerMetrics struct {
	added, removed      *prometheus.HistogramVec
	endpointsDesired    *prometheus.GaugeVec
	numSlices           *prometheus.GaugeVec
	desiredSlices       *prometheus.GaugeVec
	changes             *prometheus.CounterVec
	changedPerSync      *prometheus.HistogramVec
	syncs               *prometheus.CounterVec
	byTrafficDistribute *prometheus.GaugeVec

	mu     sync.Mutex
	max    int
	cache  map[types.NamespacedName]serviceEfficiency
	totals serviceEfficiency // sums over cache
	byTD   map[string]int    // Services per trafficDistribution
}

// serviceEfficiency is a Service's totals for the efficiency gauges and
// its valid trafficDistribution ("" if none).
type serviceEfficiency struct {
	endpoints, actual, desired int
	trafficDistribution        string
}

// newControllerMetrics registers the metrics on reg; nil reg means none.
func newControllerMetrics(reg prometheus.Registerer, maxPerSlice int) (*controllerMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	opts := func(name, help string) (string, string, string) { return metricsSubsystem, name, help }
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		sub, n, h := opts(name, help)
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: sub, Name: n, Help: h, Buckets: buckets}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		sub, n, h := opts(name, help)
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: n, Help: h}, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		sub, n, h := opts(name, help)
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: n, Help: h}, labels)
	}
	perSync := prometheus.ExponentialBuckets(2, 2, 15)
	m := &controllerMetrics{
		added:               hist("endpoints_added_per_sync", "[BETA] Number of endpoints added on each Service sync", perSync),
		removed:             hist("endpoints_removed_per_sync", "[BETA] Number of endpoints removed on each Service sync", perSync),
		endpointsDesired:    gauge("endpoints_desired", "[BETA] Number of endpoints desired"),
		numSlices:           gauge("num_endpoint_slices", "[BETA] Number of EndpointSlices"),
		desiredSlices:       gauge("desired_endpoint_slices", "[BETA] Number of EndpointSlices that would exist with perfect endpoint allocation"),
		changes:             counter("changes", "[ALPHA] Number of EndpointSlice changes", "operation"),
		changedPerSync:      hist("endpointslices_changed_per_sync", "[ALPHA] Number of EndpointSlices changed on each Service sync", prometheus.DefBuckets, "topology", "traffic_distribution"),
		syncs:               counter("syncs", "[ALPHA] Number of EndpointSlice syncs", "result"),
		byTrafficDistribute: gauge("services_count_by_traffic_distribution", "[BETA] Number of Services using some specific trafficDistribution", "traffic_distribution"),
		max:                 maxPerSlice,
		cache:               map[types.NamespacedName]serviceEfficiency{},
		byTD:                map[string]int{},
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.added, m.removed, m.endpointsDesired, m.numSlices, m.desiredSlices,
		m.changes, m.changedPerSync, m.syncs, m.byTrafficDistribute} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("endpointslice: registering metrics: %w", err)
	}
	// Gauges exist (at zero) from the start, as upstream's do once set.
	m.mu.Lock()
	m.publishLocked()
	m.mu.Unlock()
	return m, nil
}

// syncResult counts one sync: "success", "stale" or "error".
func (m *controllerMetrics) syncResult(err error) {
	if m == nil {
		return
	}
	result := "success"
	switch {
	case errors.Is(err, ErrStaleInformer):
		result = "stale"
	case err != nil:
		result = "error"
	}
	m.syncs.WithLabelValues(result).Inc()
}

// change counts one successful write: "create", "update" or "delete".
func (m *controllerMetrics) change(op string) {
	if m == nil {
		return
	}
	m.changes.WithLabelValues(op).Inc()
}

// planned records a sync's endpoint churn and number of slices written.
func (m *controllerMetrics) planned(added, removed, written int, topology, trafficDistribution string) {
	if m == nil {
		return
	}
	m.added.WithLabelValues().Observe(float64(added))
	m.removed.WithLabelValues().Observe(float64(removed))
	m.changedPerSync.WithLabelValues(topology, trafficDistribution).Observe(float64(written))
}

// service records a Service's final slices, for the efficiency gauges
// (upstream's rules: per address type and port set, its endpoints, its
// slices and ceil(endpoints/max) desired slices; at least one desired
// slice per Service), and its valid trafficDistribution ("" for none).
func (m *controllerMetrics) service(nn types.NamespacedName, final [][]slicer.Slice, trafficDistribution string) {
	if m == nil {
		return
	}
	groups := map[string]int{}
	e := serviceEfficiency{trafficDistribution: trafficDistribution}
	for _, list := range final {
		for i := range list {
			s := &list[i]
			groups[portSetKey(s)] += len(s.Endpoints)
			e.endpoints += len(s.Endpoints)
			e.actual++
		}
	}
	for _, n := range groups {
		e.desired += (n + m.max - 1) / m.max
	}
	e.desired = max(e.desired, 1)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(nn)
	m.cache[nn] = e
	m.totals.endpoints += e.endpoints
	m.totals.actual += e.actual
	m.totals.desired += e.desired
	if e.trafficDistribution != "" {
		m.byTD[e.trafficDistribution]++
	}
	m.publishLocked()
}

// deleteService forgets a deleted Service.
func (m *controllerMetrics) deleteService(nn types.NamespacedName) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(nn)
	m.publishLocked()
}

func (m *controllerMetrics) removeLocked(nn types.NamespacedName) {
	old, ok := m.cache[nn]
	if !ok {
		return
	}
	delete(m.cache, nn)
	m.totals.endpoints -= old.endpoints
	m.totals.actual -= old.actual
	m.totals.desired -= old.desired
	if old.trafficDistribution != "" {
		if m.byTD[old.trafficDistribution]--; m.byTD[old.trafficDistribution] == 0 {
			delete(m.byTD, old.trafficDistribution)
		}
	}
}

func (m *controllerMetrics) publishLocked() {
	m.endpointsDesired.WithLabelValues().Set(float64(m.totals.endpoints))
	m.numSlices.WithLabelValues().Set(float64(m.totals.actual))
	m.desiredSlices.WithLabelValues().Set(float64(m.totals.desired))
	m.byTrafficDistribute.Reset()
	for td, n := range m.byTD {
		m.byTrafficDistribute.WithLabelValues(td).Set(float64(n))
	}
}

// portSetKey identifies a slice's address type and port set (as a
// multiset).
func portSetKey(s *slicer.Slice) string {
	parts := make([]string, len(s.Ports))
	for i, p := range s.Ports {
		parts[i] = fmt.Sprintf("%s/%d/%s/%s", p.Name, p.Port, p.Protocol, p.AppProtocol)
	}
	slices.Sort(parts)
	return string(s.AddressType) + "|" + strings.Join(parts, ",")
}
