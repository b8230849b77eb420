package apfcompare

import (
	"fmt"
	"sync"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
)

// dispatchMetrics are, per priority level, the last dispatch-time virtual
// times (dispatch_r, latest_s, next_s_bounds min and max,
// next_discounted_s_bounds min and max) and, per "level/flow schema",
// request_dispatch_no_accommodation_total.
type dispatchMetrics struct {
	Virtual map[string][6]float64
	NoFit   map[string]float64
}

var registerUpstream sync.Once

// resetUpstreamMetrics registers upstream's metrics (they are no-ops until
// registered) and zeroes them, so that a scenario starts from nothing.
func resetUpstreamMetrics() {
	registerUpstream.Do(metrics.Register)
	metrics.Reset()
}

// upstreamDispatchMetrics reads upstream's global metrics.
func upstreamDispatchMetrics() (dispatchMetrics, error) {
	out := dispatchMetrics{Virtual: map[string][6]float64{}, NoFit: map[string]float64{}}
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return out, err
	}
	slot := map[string]int{"apiserver_flowcontrol_dispatch_r": 0, "apiserver_flowcontrol_latest_s": 1,
		"apiserver_flowcontrol_next_s_bounds": 2, "apiserver_flowcontrol_next_discounted_s_bounds": 4}
	for _, mf := range mfs {
		i, virtual := slot[mf.GetName()]
		noFit := mf.GetName() == "apiserver_flowcontrol_request_dispatch_no_accommodation_total"
		if !virtual && !noFit {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if noFit {
				out.NoFit[l["priority_level"]+"/"+l["flow_schema"]] = m.GetCounter().GetValue()
				continue
			}
			v := out.Virtual[l["priority_level"]]
			j := i
			if l["bound"] == "max" {
				j++
			}
			v[j] = m.GetGauge().GetValue()
			out.Virtual[l["priority_level"]] = v
		}
	}
	return out, nil
}

// DispatchStats records apf's dispatch-time statistics as apfmetrics
// exports them.
func (o observer) DispatchStats(pl string, s fairqueue.DispatchStats) {
	o.d.mu.Lock()
	o.d.metrics.Virtual[pl] = [6]float64{s.R.Float(), s.S.Float(), s.SMin.Float(), s.SMax.Float(), s.DiscountedSMin.Float(), s.DiscountedSMax.Float()}
	o.d.mu.Unlock()
}

// NoAccommodation counts apf's dispatch attempts that found too few seats.
func (o observer) NoAccommodation(ev apf.RequestEvent) {
	o.d.mu.Lock()
	o.d.metrics.NoFit[ev.PriorityLevel+"/"+ev.FlowSchema]++
	o.d.mu.Unlock()
}

var _ apf.DispatchObserver = observer{}

// compareDispatchMetrics compares upstream's dispatch-time metrics with
// apf's DispatchObserver events so far.
func compareDispatchMetrics(ours *oursDriver) string {
	up, err := upstreamDispatchMetrics()
	if err != nil {
		return fmt.Sprintf("gathering upstream's metrics: %v", err)
	}
	ours.mu.Lock()
	defer ours.mu.Unlock()
	return cmp.Diff(up, ours.metrics)
}
