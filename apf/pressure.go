package apf

import (
	"net/http"
	"strconv"
)

// Pressure returns the APF pressure of the priority level the request
// executes in, on this server, now: the seats its executing requests hold
// plus the seats its waiting requests ask for, over the level's current
// concurrency limit (a limit of 0 seats counts as 1). It is at most 1 while
// nothing waits and above 1 when requests queue, which is what a load
// balancer needs to tell a saturated replica from a busy one; it counts
// the request itself. An exempt level has no limit: its pressure is 0.
// Cost: the level's lock, no allocation. Like every Ticket method it
// panics on a finished Ticket.
func (t Ticket) Pressure() float64 {
	return t.live("Pressure").lv.pressure()
}

// LevelPressure returns the pressure (see Ticket.Pressure) of the named
// priority level of the current configuration, and false if it has no
// such level. It is what a rejected request, which has no Ticket, reports
// for its level (RejectedError.Classification.PriorityLevel). O(levels),
// no allocation.
func (c *Controller) LevelPressure(priorityLevel string) (float64, bool) {
	for _, lv := range c.snap.Load().levels {
		if lv.name == priorityLevel {
			return lv.pressure(), true
		}
	}
	return 0, false
}

func (lv *level) pressure() float64 {
	if lv.exempt {
		return 0
	}
	lv.mu.Lock()
	counts := lv.qs.Counts()
	limit := lv.qcfg.ConcurrencyLimit
	lv.mu.Unlock()
	return float64(counts.SeatsInUse+counts.SeatsWaiting) / float64(max(limit, 1))
}

// HeaderEndpointLoadMetrics is the response header in which an HTTP server
// reports its load to a balancer in ORCA's formats (gRFC A51: "TEXT " then
// comma-separated name=value pairs of the OrcaLoadReport fields).
const HeaderEndpointLoadMetrics = "endpoint-load-metrics"

// FormatLoadReport returns the ORCA TEXT form of a load report with the
// given application_utilization, as HandlerOptions.LoadMetricsHeader writes
// it: "TEXT application_utilization=<u>, rps_fractional=1".
//
// rps_fractional is a constant 1, not the server's request rate, on
// purpose: client-side weighted round robin (grpc-go's and Envoy's, gRFC
// A58) ignores a report without it and weighs an endpoint by
// rps_fractional / utilization, so with 1 the weight is 1/pressure and a
// saturated replica weighs less than an idle one. With the real rate
// beside a utilization capped at 1, rate / utilization is each replica's
// capacity, saturated or not, and the balancer does not steer (package
// grpcapf's doc has the measurement).
func FormatLoadReport(utilization float64) string {
	return "TEXT application_utilization=" + strconv.FormatFloat(utilization, 'f', 6, 64) + ", rps_fractional=1"
}

// setLoadMetrics writes the endpoint-load-metrics header with the
// pressure of the request's level, for HandlerOptions.LoadMetricsHeader;
// cl is where a rejected request was classified, t the admitted one's
// Ticket (zero when rejected).
func (h *handler) setLoadMetrics(w http.ResponseWriter, t Ticket, cl *Classification) {
	if !h.opts.LoadMetricsHeader {
		return
	}
	var p float64
	if t.t != nil {
		p = t.Pressure()
	} else if lp, ok := h.c.LevelPressure(cl.PriorityLevel); ok {
		p = lp
	}
	if p > 0 {
		w.Header().Set(HeaderEndpointLoadMetrics, FormatLoadReport(p))
	}
}
