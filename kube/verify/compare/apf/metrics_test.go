package apfcompare

import (
	"fmt"
	"sync"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
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

// borrowingMetrics are, per priority level, the demand statistics and
// limits of the last borrowing adjustment (demand_seats_high_watermark,
// demand_seats_average, demand_seats_stdev, demand_seats_smoothed,
// target_seats, current_limit_seats), and seat_fair_frac.
type borrowingMetrics struct {
	Levels   map[string][6]float64
	FairFrac float64
}

// borrowingMetricNames index borrowingMetrics.Levels' arrays.
var borrowingMetricNames = map[string]int{
	"apiserver_flowcontrol_demand_seats_high_watermark": 0, "apiserver_flowcontrol_demand_seats_average": 1,
	"apiserver_flowcontrol_demand_seats_stdev": 2, "apiserver_flowcontrol_demand_seats_smoothed": 3,
	"apiserver_flowcontrol_target_seats": 4, "apiserver_flowcontrol_current_limit_seats": 5,
}

// upstreamBorrowingMetrics reads upstream's global borrowing metrics. The
// exempt level's target_seats is left out: upstream sets it to the target
// of whichever non-exempt level its map iteration happened to put first.
func upstreamBorrowingMetrics() (borrowingMetrics, error) {
	out := borrowingMetrics{Levels: map[string][6]float64{}}
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return out, err
	}
	for _, mf := range mfs {
		if mf.GetName() == "apiserver_flowcontrol_seat_fair_frac" {
			for _, m := range mf.GetMetric() {
				out.FairFrac = m.GetGauge().GetValue()
			}
			continue
		}
		i, ok := borrowingMetricNames[mf.GetName()]
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			var pl string
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "priority_level" {
					pl = lp.GetValue()
				}
			}
			v := out.Levels[pl]
			if !(i == 4 && pl == flowschema.PriorityLevelNameExempt) {
				v[i] = m.GetGauge().GetValue()
			}
			out.Levels[pl] = v
		}
	}
	return out, nil
}

// LevelLimits records apf's limits after a configuration change or an
// adjustment, as apfmetrics exports them.
func (o observer) LevelLimits(pl string, l apf.Limits) {
	target := l.Target
	if pl == flowschema.PriorityLevelNameExempt {
		target = 0 // see upstreamBorrowingMetrics
	}
	o.d.mu.Lock()
	o.d.borrowing.Levels[pl] = [6]float64{l.DemandHighWatermark, l.DemandAverage, l.DemandStdDev, l.DemandSmoothed, target, float64(l.Current)}
	o.d.borrowing.FairFrac = l.FairFrac
	o.d.mu.Unlock()
}

// compareBorrowingMetrics compares upstream's borrowing metrics with apf's
// last LevelLimits events: the levels' values bit for bit, the fair
// fraction to a relative 1e-12, because upstream sums the targets in map
// iteration order, so that its own last bits vary from run to run. Call it
// after an adjustment, which sets upstream's metrics of every level.
func compareBorrowingMetrics(ours *oursDriver) string {
	up, err := upstreamBorrowingMetrics()
	if err != nil {
		return fmt.Sprintf("gathering upstream's metrics: %v", err)
	}
	ours.mu.Lock()
	defer ours.mu.Unlock()
	return cmp.Diff(up, ours.borrowing, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".FairFrac" },
		cmpopts.EquateApprox(1e-12, 0)))
}
