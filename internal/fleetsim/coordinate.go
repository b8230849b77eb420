package fleetsim

import (
	"context"
	"fmt"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/fleet"
)

// coordination is a replica's part of Config.Coordinate: the same code a
// server runs, a fleet.Coordinator joined with the replica's controller
// (fleet.Join), whose apf.FlowLimiter enforces the caps inside Wait.
type coordination struct {
	co *fleet.Coordinator
}

// newController builds replica r's controller: with Config.Coordinate or
// GoAwayTargeted, joined to the fleet's store with a Coordinator (for
// targeting only without Coordinate: fleet.CoordinatorConfig.TargetOnly,
// no fleet level limits, no caps), run every GoAway.Period with
// GoAwayTargeted (steering needs fresh summaries), else every
// CoordinationPeriod; with GoAwayTargeted an apf.TargetedGoAway, the
// Coordinator's, closing at most one connection of a flow per
// GoAway.Period.
func (s *sim) newController(r *replica) (*apf.Controller, error) {
	opts := apf.Options{ServerConcurrencyLimit: s.cfg.ServerConcurrencyLimit, Clock: s.clock, Observer: observer{rep: r}}
	if !s.cfg.Coordinate && s.cfg.GoAway.Mode != GoAwayTargeted {
		return apf.New(s.cfg.FlowControl, opts)
	}
	if s.store == nil {
		s.store = fleet.NewMemoryStore()
		s.period = s.cfg.CoordinationPeriod
		if !s.cfg.Coordinate || s.cfg.GoAway.Mode == GoAwayTargeted {
			s.period = s.cfg.GoAway.Period
		}
	}
	cfg := fleet.CoordinatorConfig{
		Replica: fmt.Sprintf("replica-%02d", r.index), Store: s.store,
		Period: s.period, TargetOnly: !s.cfg.Coordinate,
	}
	if s.cfg.GoAway.Mode == GoAwayTargeted {
		g, err := apf.NewTargetedGoAway(s.cfg.GoAway.Period)
		if err != nil {
			return nil, err
		}
		r.goAway, cfg.GoAway = g, g
	}
	if s.cfg.CapsWait {
		opts.FlowLimiter = apf.NewHoldingFlowLimiter()
	}
	c, co, err := fleet.Join(s.cfg.FlowControl, opts, cfg)
	if err != nil {
		return nil, err
	}
	r.coord = &coordination{co: co}
	return c, nil
}

// startCoordination schedules the first round of the replicas'
// Coordinators.
func (s *sim) startCoordination() {
	s.clock.AfterFunc(s.period, s.exchangeRound)
}

// exchangeRound runs one period's round on every replica in turn.
func (s *sim) exchangeRound() {
	s.clock.AfterFunc(s.period, s.exchangeRound)
	for _, r := range s.replicas {
		if err := r.coord.co.Round(context.Background(), s.clock.Now()); err != nil {
			panic(fmt.Sprintf("fleetsim: the memory store failed: %v", err)) // it fails only when told to
		}
	}
}
