package flowschemacompare

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/kube/internal/upstream/upstreamfs"
	"github.com/fairslice/fairslice/seats"
)

// levelLimits is what upstream exposes about a level's limits: its
// metrics (nominal_limit_seats, lower_limit_seats, upper_limit_seats, and
// current_limit_seats after the borrowing adjustment made when the
// configuration is digested, with no demand yet) and its max-seats tracker.
type levelLimits struct {
	Nominal, Min, Max, Current int
	MaxSeats                   uint64
}

func gauges(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, f := range families {
		byLevel := map[string]float64{}
		for _, m := range f.GetMetric() {
			if g := m.GetGauge(); g != nil {
				byLevel[label(m, "priority_level")] = g.GetValue()
			}
		}
		out[f.GetName()] = byLevel
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestLimitsDifferential compares ComputeLimits and Borrow (with no
// demand) with upstream's controller for random configurations and
// server concurrency limits. Upstream's computeConcurrencyAllocation is
// unexported; this is the part of it reachable from outside (all three
// regimes need demand, which only the controller's real-time 10-second
// loop feeds; see testdata/borrowing.golden for those).
func TestLimitsDifferential(t *testing.T) {
	metrics.Register()
	s := seed(t)
	g := gen{rand.New(rand.NewPCG(s, 0x1111))}
	n := *fsConfigs / 2
	for k := 0; k <= n; k++ {
		cfg := flowschema.DefaultConfig()
		server := 600
		if k > 0 {
			cfg = g.config(5)
			server = 1 + g.r.IntN(3000)
		}
		c, err := flowschema.Compile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		limits, err := seats.ComputeLimits(server, c.PriorityLevels())
		if err != nil {
			t.Fatal(err)
		}
		levels := make([]seats.BorrowingLevel, len(limits))
		for i, l := range limits {
			levels[i] = seats.BorrowingLevel{Limits: l, CurrentCL: l.InitialCL}
		}
		alloc := seats.Borrow(server, levels, seats.BorrowingOptions{})
		up, err := upstreamfs.Start(cfg, server)
		if err != nil {
			t.Fatal(err)
		}
		gs := gauges(t)
		want, got := map[string]levelLimits{}, map[string]levelLimits{}
		for i, l := range limits {
			want[l.Name] = levelLimits{
				Nominal: int(gs["apiserver_flowcontrol_nominal_limit_seats"][l.Name]),
				Min:     int(gs["apiserver_flowcontrol_lower_limit_seats"][l.Name]),
				Max:     int(gs["apiserver_flowcontrol_upper_limit_seats"][l.Name]),
				Current: int(gs["apiserver_flowcontrol_current_limit_seats"][l.Name]),
				// 0 for levels that do not queue: "use the global cap".
				MaxSeats: up.MaxSeats(l.Name),
			}
			got[l.Name] = levelLimits{Nominal: l.NominalCL, Min: l.MinCL, Max: l.MaxCL, Current: alloc.Levels[i].CurrentCL, MaxSeats: uint64(l.MaxSeats)}
		}
		up.Close()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("config %d, server concurrency %d: limits mismatch (-upstream +fairslice):\n%s", k, server, diff)
		}
	}
}
