package fleetsim

import (
	"context"
	"fmt"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/fleet"
)

// coordination is a replica's part of Config.Coordinate: the same code a
// server runs, a fleet.Coordinator over its controller and the
// controller's apf.FlowLimiter, which enforces the caps inside Wait.
type coordination struct {
	limiter *apf.FlowLimiter
	co      *fleet.Coordinator
}

// controllerOptions are the options of replica r's controller: with
// Config.Coordinate, a FlowLimiter and the Coordinator's adjustment in
// place of the controller's own.
func (s *sim) controllerOptions(r *replica) apf.Options {
	opts := apf.Options{ServerConcurrencyLimit: s.cfg.ServerConcurrencyLimit, Clock: s.clock, Observer: observer{rep: r}}
	if s.cfg.Coordinate || s.cfg.GoAway.Mode == GoAwayTargeted {
		r.coord = &coordination{limiter: apf.NewFlowLimiter()}
		opts.FlowLimiter, opts.AdjustPeriod = r.coord.limiter, apf.ManualAdjustment
	}
	return opts
}

// startCoordination gives every replica a Coordinator on one store and
// schedules the first round. With GoAwayTargeted each replica also gets
// an apf.TargetedGoAway, the Coordinator's, closing at most one
// connection per GoAway.Period; without Coordinate the Coordinators run
// every GoAway.Period for targeting only (fleet.CoordinatorConfig.
// TargetOnly: no fleet level limits, no caps).
func (s *sim) startCoordination() error {
	store := fleet.NewMemoryStore()
	s.period = s.cfg.CoordinationPeriod
	if !s.cfg.Coordinate {
		s.period = s.cfg.GoAway.Period
	}
	for _, r := range s.replicas {
		cfg := fleet.CoordinatorConfig{
			Replica: fmt.Sprintf("replica-%02d", r.index), Store: store, Controller: r.c, Limiter: r.coord.limiter,
			Period: s.period, Clock: s.clock, TargetOnly: !s.cfg.Coordinate,
		}
		if s.cfg.GoAway.Mode == GoAwayTargeted {
			g, err := apf.NewTargetedGoAway(s.cfg.GoAway.Period)
			if err != nil {
				return err
			}
			r.goAway, cfg.GoAway = g, g
		}
		co, err := fleet.NewCoordinator(cfg)
		if err != nil {
			return err
		}
		r.coord.co = co
	}
	s.clock.AfterFunc(s.period, s.exchangeRound)
	return nil
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
