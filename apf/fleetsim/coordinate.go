package fleetsim

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/flowschema"
)

// coordination is a replica's part of Config.Coordinate: its exchange,
// its flows' seats over the current period, and the caps in force. A nil
// *coordination is a replica that does not coordinate; every method is a
// no-op on it.
type coordination struct {
	ex      *fleet.Exchange
	caps    map[string]float64 // by flow name
	inUse   []int              // seats waiting or executing, by flow
	running []int              // seats executing, by flow
	held    []float64          // seat-seconds executed this period, by flow
	refused []float64          // seat-seconds refused this period, by flow
}

// startCoordination gives every replica an exchange on one store and
// schedules the first round.
func (s *sim) startCoordination() error {
	store := fleet.NewMemoryStore()
	for _, r := range s.replicas {
		ex, err := fleet.NewExchange(fleet.ExchangeConfig{Replica: fmt.Sprintf("replica-%02d", r.index), Store: store})
		if err != nil {
			return err
		}
		n := len(s.cfg.Flows)
		r.coord = &coordination{ex: ex, inUse: make([]int, n), running: make([]int, n), held: make([]float64, n), refused: make([]float64, n)}
	}
	s.clock.AfterFunc(s.cfg.CoordinationPeriod, s.exchangeRound)
	return nil
}

// exchangeRound runs one period's round on every replica in turn: each
// publishes its summary, reads its peers' and sets its caps.
func (s *sim) exchangeRound() {
	s.clock.AfterFunc(s.cfg.CoordinationPeriod, s.exchangeRound)
	for _, r := range s.replicas {
		own := s.summary(r)
		peers, err := r.coord.ex.Round(context.Background(), own)
		if err != nil {
			panic(fmt.Sprintf("fleetsim: the memory store failed: %v", err)) // it fails only when told to
		}
		r.coord.caps = fleet.FlowCaps(s.cfg.Level, own, peers)
		clear(r.coord.held)
		clear(r.coord.refused)
	}
}

// summary is what replica r publishes: the level and its heaviest flows
// of the period. A server would measure a flow's mean execution time;
// the simulator knows it.
func (s *sim) summary(r *replica) fleet.Summary {
	l := r.limits
	sum := fleet.Summary{ServerConcurrencyLimit: s.cfg.ServerConcurrencyLimit, Levels: []fleet.LevelDemand{{
		Name: s.cfg.Level, CurrentCL: l.Current,
		Limits: flowschema.LevelLimits{Name: s.cfg.Level, NominalCL: l.Nominal, LendableCL: l.Lendable, BorrowingCL: l.Borrowing,
			MinCL: l.Lower, MaxCL: l.Upper, MaxSeats: int(l.MaxSeats)},
		Demand: flowschema.SeatDemand{Average: l.DemandAverage, StdDev: l.DemandStdDev,
			HighWatermark: int(l.DemandHighWatermark), Smoothed: l.DemandSmoothed},
	}}}
	period := s.cfg.CoordinationPeriod.Seconds()
	for i, f := range s.cfg.Flows {
		held, refused := r.coord.held[i], r.coord.refused[i]
		if held+refused > 0 {
			sum.Flows = append(sum.Flows, fleet.FlowDemand{Level: s.cfg.Level, Flow: f.Name, Seats: held / period, Demand: (held + refused) / period})
		}
	}
	slices.SortStableFunc(sum.Flows, func(a, b fleet.FlowDemand) int { return cmp.Compare(b.Seats, a.Seats) })
	if len(sum.Flows) > fleet.MaxTopFlows {
		sum.Flows = sum.Flows[:fleet.MaxTopFlows]
	}
	return sum
}

// refuses reports whether rq would take its flow above its cap on its
// replica (caps are in seats; the nearest whole number applies).
func (c *coordination) refuses(rq *request) bool {
	if c == nil {
		return false
	}
	cp, ok := c.caps[rq.req.User.Name]
	return ok && float64(c.inUse[rq.client.flow]+rq.want) > cp+0.5
}

// overCap reports whether dispatched request rq would take its flow's
// executing seats above its cap; if not, they are counted.
func (c *coordination) overCap(rq *request) bool {
	if c == nil {
		return false
	}
	if cp, ok := c.caps[rq.req.User.Name]; ok && float64(c.running[rq.client.flow]+rq.seats) > cp+0.5 {
		return true
	}
	c.running[rq.client.flow] += rq.seats
	return false
}

// stopped takes finished rq's seats out of its flow's executing ones.
func (c *coordination) stopped(rq *request) {
	if c != nil {
		c.running[rq.client.flow] -= rq.seats
	}
}

// admitted counts rq's seats in its flow's use of the replica.
func (c *coordination) admitted(rq *request) {
	if c != nil {
		c.inUse[rq.client.flow] += rq.want
	}
}

// left takes rq's seats out of its flow's use of the replica.
func (c *coordination) left(rq *request) {
	if c != nil {
		c.inUse[rq.client.flow] -= rq.want
	}
}

// executed counts rq's execution in its flow's period.
func (c *coordination) executed(rq *request, exec time.Duration) {
	if c != nil {
		c.held[rq.client.flow] += float64(rq.seats) * exec.Seconds()
	}
}

// wasRefused counts rq's refusal in its flow's period, as the seat-seconds
// it would have held.
func (c *coordination) wasRefused(rq *request, exec time.Duration) {
	if c != nil {
		c.refused[rq.client.flow] += float64(rq.want) * exec.Seconds()
	}
}
