package endpointslice

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fairslice/fairslice/slicer"
)

// metricsSubsystem is upstream's subsystem: every metric is named
// endpoint_slice_controller_<name>.
const metricsSubsystem = "endpoint_slice_controller"

// metricSet builds the metrics of one subsystem and registers them
// together.
type metricSet struct {
	subsystem   string
	constLabels prometheus.Labels // nil: none
	collectors  []prometheus.Collector
}

func (s *metricSet) hist(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: s.subsystem, ConstLabels: s.constLabels, Name: name, Help: help, Buckets: buckets}, labels)
	s.collectors = append(s.collectors, h)
	return h
}

func (s *metricSet) gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: s.subsystem, ConstLabels: s.constLabels, Name: name, Help: help}, labels)
	s.collectors = append(s.collectors, g)
	return g
}

func (s *metricSet) counter(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: s.subsystem, ConstLabels: s.constLabels, Name: name, Help: help}, labels)
	s.collectors = append(s.collectors, c)
	return c
}

// register registers every metric built so far on reg.
func (s *metricSet) register(reg prometheus.Registerer) error {
	var errs []error
	for _, c := range s.collectors {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("endpointslice: registering %s metrics: %w", s.subsystem, err)
	}
	return nil
}

// efficiency keeps, per owner (a Service or an Endpoints object), its
// endpoints, its slices and the slices a perfect packing would need, and
// publishes the sums as the endpoints_desired, num_endpoint_slices and
// desired_endpoint_slices gauges (and, when byTrafficDistribution is
// set, the owners per trafficDistribution, a value once used staying at
// zero), as upstream's metrics caches do.
type efficiency struct {
	endpointsDesired, numSlices, desiredSlices *prometheus.GaugeVec
	byTrafficDistribution                      *prometheus.GaugeVec // nil: not kept

	mu     sync.Mutex
	cache  map[types.NamespacedName]serviceEfficiency
	totals serviceEfficiency // sums over cache
	byTD   map[string]int    // owners per trafficDistribution ever used
}

func newEfficiency(s *metricSet, help string) *efficiency {
	return &efficiency{
		endpointsDesired: s.gauge("endpoints_desired", help+"Number of endpoints desired"),
		numSlices:        s.gauge("num_endpoint_slices", help+"Number of EndpointSlices"),
		desiredSlices:    s.gauge("desired_endpoint_slices", help+"Number of EndpointSlices that would exist with perfect endpoint allocation"),
		cache:            map[types.NamespacedName]serviceEfficiency{},
		byTD:             map[string]int{},
	}
}

// set replaces an owner's figures and publishes the sums.
func (e *efficiency) set(nn types.NamespacedName, cur serviceEfficiency) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.removeLocked(nn)
	e.cache[nn] = cur
	e.totals.endpoints += cur.endpoints
	e.totals.actual += cur.actual
	e.totals.desired += cur.desired
	if cur.trafficDistribution != "" {
		e.byTD[cur.trafficDistribution]++
	}
	e.publishLocked()
}

// delete forgets an owner; publish says whether to publish the sums even
// if the owner was not known.
func (e *efficiency) delete(nn types.NamespacedName, publish bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.removeLocked(nn) || publish {
		e.publishLocked()
	}
}

func (e *efficiency) removeLocked(nn types.NamespacedName) bool {
	old, ok := e.cache[nn]
	if !ok {
		return false
	}
	delete(e.cache, nn)
	e.totals.endpoints -= old.endpoints
	e.totals.actual -= old.actual
	e.totals.desired -= old.desired
	if old.trafficDistribution != "" {
		// Kept at zero, not forgotten: upstream's series of a value
		// stays once a Service has used it.
		e.byTD[old.trafficDistribution]--
	}
	return true
}

func (e *efficiency) publishLocked() {
	e.endpointsDesired.WithLabelValues().Set(float64(e.totals.endpoints))
	e.numSlices.WithLabelValues().Set(float64(e.totals.actual))
	e.desiredSlices.WithLabelValues().Set(float64(e.totals.desired))
	if e.byTrafficDistribution == nil {
		return
	}
	e.byTrafficDistribution.Reset()
	for td, n := range e.byTD {
		e.byTrafficDistribution.WithLabelValues(td).Set(float64(n))
	}
}

// controllerMetrics are upstream's EndpointSlice controller metrics
// (k8s.io/endpointslice/metrics v0.37.2: names, help, labels, buckets) on
// a registry the caller chose, recorded as upstream's reconciler records
// them (see planned). A nil *controllerMetrics records nothing.
type controllerMetrics struct {
	added, removed *prometheus.HistogramVec
	changes        *prometheus.CounterVec
	changedPerSync *prometheus.HistogramVec
	syncs          *prometheus.CounterVec
	*efficiency
	max int
}

// serviceEfficiency is an owner's totals for the efficiency gauges and
// its valid trafficDistribution ("" if none).
type serviceEfficiency struct {
	endpoints, actual, desired int
	trafficDistribution        string
}

// newControllerMetrics registers the metrics on reg under subsystem,
// with constLabels on each; nil reg means none.
func newControllerMetrics(reg prometheus.Registerer, subsystem string, constLabels prometheus.Labels, maxPerSlice int) (*controllerMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	s := &metricSet{subsystem: subsystem, constLabels: constLabels}
	perSync := prometheus.ExponentialBuckets(2, 2, 15)
	m := &controllerMetrics{
		added:   s.hist("endpoints_added_per_sync", "[BETA] Number of endpoints added on each Service sync", perSync),
		removed: s.hist("endpoints_removed_per_sync", "[BETA] Number of endpoints removed on each Service sync", perSync),
	}
	m.efficiency = newEfficiency(s, "[BETA] ")
	m.changes = s.counter("changes", "[ALPHA] Number of EndpointSlice changes", "operation")
	m.changedPerSync = s.hist("endpointslices_changed_per_sync", "[ALPHA] Number of EndpointSlices changed on each Service sync", prometheus.DefBuckets, "topology", "traffic_distribution")
	m.syncs = s.counter("syncs", "[ALPHA] Number of EndpointSlice syncs", "result")
	m.byTrafficDistribution = s.gauge("services_count_by_traffic_distribution", "[BETA] Number of Services using some specific trafficDistribution", "traffic_distribution")
	m.max = maxPerSlice
	if err := s.register(reg); err != nil {
		return nil, err
	}
	// Gauges exist (at zero) from the start, as upstream's do once set.
	m.delete(types.NamespacedName{}, true)
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

// planned records a sync that reached the reconciler as upstream's
// reconciler does, which handles each address type of the Service on its
// own: for each type, in the plan's order, the endpoints added and
// removed and, if written says that all of the type's writes were made
// (upstream observes nothing for a type whose writes stopped at a failure
// or at a create refused because the namespace is terminating), the
// slices changed (creates a Service being deleted leaves out included, as
// upstream counts them; deletes of slices of address types the Service no
// longer has not, as upstream makes those outside the per-type
// reconciliation); and the
// type's efficiency figures, which replace the Service's previous ones,
// so that a Service counts with its last address type. Upstream ranges
// over a set of address types, in a random order; this order (IPv4
// before IPv6) is one of its orders. The Service's valid
// trafficDistribution ("" for none) is counted too.
func (m *controllerMetrics) planned(nn types.NamespacedName, plan *slicer.Plan, written map[slicer.AddressType]bool, topology, trafficDistribution string) {
	if m == nil {
		return
	}
	for _, t := range plan.Types {
		m.added.WithLabelValues().Observe(float64(t.Added))
		m.removed.WithLabelValues().Observe(float64(t.Removed))
		if written[t.AddressType] {
			changed := 0
			for _, list := range [][]slicer.Slice{plan.Creates, plan.Updates, plan.Deletes, plan.Dropped} {
				changed += countType(list, t.AddressType)
			}
			m.changedPerSync.WithLabelValues(topology, trafficDistribution).Observe(float64(changed))
		}
	}
	if len(plan.Types) > 0 {
		last := plan.Types[len(plan.Types)-1].AddressType
		m.set(nn, m.efficiencyOf(last, trafficDistribution, plan.Creates, plan.Updates, plan.Unchanged, plan.Dropped))
	}
}

// countType returns the number of slices of type at in list.
func countType(list []slicer.Slice, at slicer.AddressType) int {
	n := 0
	for i := range list {
		if list[i].AddressType == at {
			n++
		}
	}
	return n
}

// efficiencyOf returns the efficiency figures of the slices of type at
// a sync leaves (upstream's rules: per port set, its endpoints, its
// slices and ceil(endpoints/max) desired slices; at least one desired
// slice in all), with the valid trafficDistribution ("" for none).
func (m *controllerMetrics) efficiencyOf(at slicer.AddressType, trafficDistribution string, final ...[]slicer.Slice) serviceEfficiency {
	groups := map[string]int{}
	e := serviceEfficiency{trafficDistribution: trafficDistribution}
	for _, list := range final {
		for i := range list {
			s := &list[i]
			if s.AddressType != at {
				continue
			}
			groups[portSetKey(s.AddressType, s.Ports)] += len(s.Endpoints)
			e.endpoints += len(s.Endpoints)
			e.actual++
		}
	}
	for _, n := range groups {
		e.desired += (n + m.max - 1) / m.max
	}
	e.desired = max(e.desired, 1)
	return e
}

// deleteService forgets a deleted Service.
func (m *controllerMetrics) deleteService(nn types.NamespacedName) {
	if m == nil {
		return
	}
	m.delete(nn, true)
}

// portSetKey identifies an address type and a port set (as a
// multiset).
func portSetKey(at slicer.AddressType, ports []slicer.Port) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%q/%d/%s/%q", p.Name, p.Port, p.Protocol, p.AppProtocol)
	}
	slices.Sort(parts)
	return string(at) + "|" + strings.Join(parts, ",")
}

// mirroringSubsystem is upstream's subsystem of the mirroring
// controller's metrics: endpoint_slice_mirroring_controller_<name>.
const mirroringSubsystem = "endpoint_slice_mirroring_controller"

// mirroringMetrics are upstream's EndpointSliceMirroring controller
// metrics (k8s.io/kubernetes v1.37.2,
// pkg/controller/endpointslicemirroring/metrics: names, help, labels,
// buckets) on a registry the caller chose. A nil *mirroringMetrics
// records nothing.
type mirroringMetrics struct {
	added, updated, removed, skipped, duration *prometheus.HistogramVec
	changes                                    *prometheus.CounterVec
	*efficiency
	max int
}

// newMirroringMetrics registers the metrics on reg; nil reg means none.
// As upstream's, the gauges appear with the first mirrored Endpoints.
func newMirroringMetrics(reg prometheus.Registerer, maxPerSubset int) (*mirroringMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	s := &metricSet{subsystem: mirroringSubsystem}
	perSync := prometheus.ExponentialBuckets(2, 2, 15)
	m := &mirroringMetrics{
		added:    s.hist("endpoints_added_per_sync", "[ALPHA] Number of endpoints added on each Endpoints sync", perSync),
		updated:  s.hist("endpoints_updated_per_sync", "[ALPHA] Number of endpoints updated on each Endpoints sync", perSync),
		removed:  s.hist("endpoints_removed_per_sync", "[ALPHA] Number of endpoints removed on each Endpoints sync", perSync),
		skipped:  s.hist("addresses_skipped_per_sync", "[ALPHA] Number of addresses skipped on each Endpoints sync due to being invalid or exceeding MaxEndpointsPerSubset", perSync),
		duration: s.hist("endpoints_sync_duration", "[ALPHA] Duration of syncEndpoints() in seconds", prometheus.ExponentialBuckets(0.001, 2, 15)),
	}
	m.efficiency = newEfficiency(s, "[ALPHA] ")
	m.changes = s.counter("changes", "[ALPHA] Number of EndpointSlice changes", "operation")
	m.max = maxPerSubset
	if err := s.register(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// synced records a sync's duration, in whole milliseconds as upstream.
func (m *mirroringMetrics) synced(d time.Duration) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues().Observe(float64(d.Milliseconds()) / 1000)
}

// mirrored records a sync that reached the reconciler: its skipped
// addresses, endpoint churn, and the Endpoints object's desired
// endpoints per address type and port set (one slice each).
func (m *mirroringMetrics) mirrored(nn types.NamespacedName, plan *slicer.MirrorPlan) {
	if m == nil {
		return
	}
	m.skipped.WithLabelValues().Observe(float64(plan.Skipped))
	m.added.WithLabelValues().Observe(float64(plan.Added))
	m.updated.WithLabelValues().Observe(float64(plan.Updated))
	m.removed.WithLabelValues().Observe(float64(plan.Removed))
	var e serviceEfficiency
	for _, n := range plan.DesiredEndpoints {
		e.endpoints += n
		e.actual++
		e.desired += (n + m.max - 1) / m.max
	}
	m.set(nn, e)
}

// change counts one successful write: "create", "update" or "delete".
func (m *mirroringMetrics) change(op string) {
	if m == nil {
		return
	}
	m.changes.WithLabelValues(op).Inc()
}

// forget drops an Endpoints object whose mirrored slices are deleted.
func (m *mirroringMetrics) forget(nn types.NamespacedName) {
	if m == nil {
		return
	}
	m.delete(nn, false)
}
