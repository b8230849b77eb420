package flowcontrol

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/flowschema"
)

// Fleet configures the coordination of Options.Fleet: every Period Run
// runs a fleet.Coordinator round instead of the plain borrowing
// adjustment, publishing this server's summary to Store and
// applying the fleet's level limits and per-flow caps (package
// apf/fleet). With no peers, or Store unreachable, every decision is the
// plain adjustment's. Store is called only from Run's adjustment
// goroutine, never on a request's path. kube/fleetlease is the Store over
// Leases of the API server.
type Fleet struct {
	// Replica names this server, unique in the fleet. Required.
	Replica string
	// Store is where the fleet's summaries go. Required.
	Store fleet.Store
	// StaleAfter is fleet.ExchangeConfig.StaleAfter.
	StaleAfter int
	// Period is how often Run runs a round (the round includes the
	// borrowing adjustment). 0 is Options.AdjustPeriod if that is set;
	// else, with GoAway, fleet.DefaultSteeringPeriod (1 s), because
	// steering needs fresh summaries: a round every 10 s moves a waiting
	// client 10 s late and judges it on a summary of where it was; else
	// BorrowingAdjustmentPeriod.
	Period time.Duration
	// Timeout bounds a round's Store calls; 0 is half the period.
	Timeout time.Duration
	// GoAway, if set, is aimed at the flows of this server that a move
	// helps (fleet.Steered, fleet.CoordinatorConfig.GoAway).
	GoAway *apf.TargetedGoAway
}

// fleetRun is the Coordinator of Options.Fleet.
type fleetRun struct {
	co *fleet.Coordinator
}

// runPeriod is how often Run adjusts the borrowing, or runs a fleet
// round with opts.Fleet (see Fleet.Period).
func runPeriod(opts Options) time.Duration {
	switch {
	case opts.Fleet != nil && opts.Fleet.Period > 0:
		return opts.Fleet.Period
	case opts.AdjustPeriod > 0:
		return opts.AdjustPeriod
	case opts.Fleet != nil && opts.Fleet.GoAway != nil:
		return fleet.DefaultSteeringPeriod
	}
	return BorrowingAdjustmentPeriod
}

// joinFleet builds the apf.Controller joined to the fleet of f
// (fleet.Join), starting from the mandatory objects alone.
func (c *Controller) joinFleet(opts apf.Options, f *Fleet) error {
	a, co, err := fleet.Join(&flowschema.Config{}, opts, fleet.CoordinatorConfig{
		Replica: f.Replica, Store: f.Store, Period: c.period,
		Timeout: f.Timeout, StaleAfter: f.StaleAfter, GoAway: f.GoAway,
	})
	if err != nil {
		return fmt.Errorf("flowcontrol: Options.Fleet: %w", err)
	}
	c.apf, c.fleet = a, &fleetRun{co: co}
	return nil
}

// adjust is Run's periodic step: a fleet round, or the adjustment alone.
func (c *Controller) adjust(stopCh <-chan struct{}) {
	if c.fleet == nil {
		c.AdjustBorrowing(c.clock.Now())
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := c.fleet.co.Round(ctx, c.clock.Now()); err != nil {
		klog.V(2).InfoS("fairslice APF fleet round failed; deciding on the peers still known", "err", err)
	}
}

// FleetPeers returns how many peers the last fleet round decided with (0:
// alone, or no Options.Fleet).
func (c *Controller) FleetPeers() int {
	if c.fleet == nil {
		return 0
	}
	return c.fleet.co.Peers()
}
