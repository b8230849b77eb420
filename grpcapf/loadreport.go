package grpcapf

import (
	"context"
	"errors"
	"time"

	"github.com/fairslice/fairslice/apf"
	"google.golang.org/grpc"
	"google.golang.org/grpc/orca"
)

// report records an ORCA per-call load report in the RPC's recorder:
// application_utilization the pressure, rps_fractional 1 (see the package
// doc, "Load reports"). A pressure of 0 (an exempt level) records nothing:
// balancers ignore a report without utilization.
func report(ctx context.Context, pressure float64) {
	if pressure <= 0 {
		return
	}
	r := orca.CallMetricsRecorderFromContext(ctx)
	if r == nil {
		return
	}
	r.SetApplicationUtilization(pressure)
	r.SetQPS(1)
}

// LoadReportServiceOptions configure RegisterLoadReportService.
type LoadReportServiceOptions struct {
	// PriorityLevels whose pressure the reports carry: the highest of
	// theirs. Empty means every priority level of the controller's
	// configuration at the time of each report.
	PriorityLevels []string
	// MinReportingInterval is the shortest interval between two reports
	// on one stream; zero, or less than orca's 30 s default, is that
	// default.
	MinReportingInterval time.Duration
}

// RegisterLoadReportService registers ORCA's out-of-band load report
// service (gRFC A51, orca.Register) on s for clients that enable it
// (grpc-go's weighted_round_robin with enableOobLoadReport): each report's
// application_utilization is the highest pressure of the chosen priority
// levels on this server, and rps_fractional is 1, as in the per-call
// reports. A server has one such service.
func RegisterLoadReportService(s grpc.ServiceRegistrar, c *apf.Controller, opts LoadReportServiceOptions) error {
	if c == nil {
		return errors.New("grpcapf: RegisterLoadReportService: the apf.Controller is nil")
	}
	return orca.Register(s, orca.ServiceOptions{
		ServerMetricsProvider: &levelsProvider{c: c, levels: opts.PriorityLevels},
		MinReportingInterval:  opts.MinReportingInterval,
	})
}

// levelsProvider is the out-of-band service's ServerMetricsProvider.
type levelsProvider struct {
	c      *apf.Controller
	levels []string
}

// ServerMetrics returns a fresh report (orca merges into it).
func (p *levelsProvider) ServerMetrics() *orca.ServerMetrics {
	sm := &orca.ServerMetrics{
		CPUUtilization: -1, MemUtilization: -1, AppUtilization: -1, QPS: -1, EPS: -1,
		Utilization: map[string]float64{}, RequestCost: map[string]float64{}, NamedMetrics: map[string]float64{},
	}
	if u := p.pressure(); u > 0 {
		sm.AppUtilization, sm.QPS = u, 1
	}
	return sm
}

func (p *levelsProvider) pressure() float64 {
	levels := p.levels
	if len(levels) == 0 {
		for _, st := range p.c.Stats() {
			levels = append(levels, st.Name)
		}
	}
	var highest float64
	for _, name := range levels {
		if u, ok := p.c.LevelPressure(name); ok {
			highest = max(highest, u)
		}
	}
	return highest
}
