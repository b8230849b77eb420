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
	if s.cfg.Coordinate {
		r.coord = &coordination{limiter: apf.NewFlowLimiter()}
		opts.FlowLimiter, opts.AdjustPeriod = r.coord.limiter, apf.ManualAdjustment
	}
	return opts
}

// startCoordination gives every replica a Coordinator on one store and
// schedules the first round.
func (s *sim) startCoordination() error {
	store := fleet.NewMemoryStore()
	for _, r := range s.replicas {
		co, err := fleet.NewCoordinator(fleet.CoordinatorConfig{
			Replica: fmt.Sprintf("replica-%02d", r.index), Store: store, Controller: r.c, Limiter: r.coord.limiter,
			Period: s.cfg.CoordinationPeriod, Clock: s.clock,
		})
		if err != nil {
			return err
		}
		r.coord.co = co
	}
	s.clock.AfterFunc(s.cfg.CoordinationPeriod, s.exchangeRound)
	return nil
}

// exchangeRound runs one period's round on every replica in turn.
func (s *sim) exchangeRound() {
	s.clock.AfterFunc(s.cfg.CoordinationPeriod, s.exchangeRound)
	for _, r := range s.replicas {
		if err := r.coord.co.Round(context.Background(), s.clock.Now()); err != nil {
			panic(fmt.Sprintf("fleetsim: the memory store failed: %v", err)) // it fails only when told to
		}
	}
}
