package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

// CoordinatorConfig configures a Coordinator (see Join).
type CoordinatorConfig struct {
	// Replica is this replica's name, unique in the fleet. Required.
	Replica string
	// Store is where the fleet's summaries go. Required.
	Store Store
	// Period is how often Start runs a round; 0 means DefaultPeriod.
	Period time.Duration
	// Timeout bounds one round's calls to the Store; 0 means Period/2.
	Timeout time.Duration
	// StaleAfter is ExchangeConfig.StaleAfter.
	StaleAfter int
	// Clock times Start's rounds; nil means the controller's
	// apf.Options.Clock (fairqueue.RealClock if that is nil too).
	Clock fairqueue.Clock
	// GoAway, if set, is aimed every round at the flows that Steered
	// finds worth moving, and at nothing else; the Controller's Handler
	// closes their connections (give it Coordinator.GoAway as
	// HandlerOptions.GoAway). The flows it targets are not capped: a
	// cap computed from where a flow was fights its move. Steering
	// needs fresh summaries: with GoAway, Period defaults to
	// DefaultSteeringPeriod.
	GoAway *apf.TargetedGoAway
	// TargetOnly makes the rounds exchange summaries and aim GoAway only:
	// no fleet level limits and no caps are set, so every admission
	// decision stays the Controller's own (its borrowing adjustment still
	// runs every round).
	TargetOnly bool
}

// DefaultSteeringPeriod is CoordinatorConfig.Period's default with a
// GoAway: a moved client's backlog on the replicas it left lasts a few
// seconds, and the summaries that show where it went are a round old.
const DefaultSteeringPeriod = time.Second

// Coordinator runs one replica's part of the fleet on an apf.Controller
// (Join builds both): it is the controller's apf.SeatPolicy, so the
// fleet's level limits are asked for inside every seat plan the
// controller makes, and every round it runs the controller's borrowing
// adjustment (the fleet's decision of the round before stays in force
// through it), builds the replica's Summary from the controller's level
// statistics (each level's Limits.Borrowed, the replica's own borrowing
// result) and its FlowLimiter's usage, runs the Exchange, and takes both
// decisions: LevelLimits becomes its policy's answer (put in force at once
// by Controller.Replan) and FlowCaps the FlowLimiter's caps. With no peers
// (a fleet of one, or a store unreachable for StaleAfter rounds) neither
// decision is taken, the caps are removed and the policy decides nothing:
// every decision is the controller's alone.
//
// In the round after GoAway closed a connection, the closed flow is left
// out of this replica's own summary when its caps are computed (the
// summary published is unchanged): its client has left, but the
// statistics still show its demand here for a period, and counting it
// would hold the flows that stay to shares computed as if it had stayed,
// leaving the replica's seats idle until the next round.
//
// Round runs one round at a caller's time; Start runs them every Period
// in a goroutine the Coordinator owns, until Close. The store is never
// called on a request's path: a slow or unreachable store delays only
// the exchange, never the adjustment or a request. Round is not safe for
// concurrent use; Start and Close are.
type Coordinator struct {
	cfg       CoordinatorConfig
	ctl       *apf.Controller
	limiter   *apf.FlowLimiter // ctl's
	borrowing seats.BorrowingOptions
	ex        *Exchange
	last      time.Time // of the previous round; zero before the first

	targets map[apf.FlowKey]bool // the flows GoAway targets: not capped

	mu      sync.Mutex
	decided map[string]int // the fleet's level limits; nil: none (guarded by mu)
	peers   int
	stop    chan struct{}
	done    chan struct{}
	started bool
}

// Join returns a Controller for objects with opts (see apf.New) and the
// Coordinator that joins it to the fleet of cfg.Store, with the facts
// both need stated once: the Coordinator runs the controller's borrowing
// adjustment (opts.AdjustPeriod must be 0 or apf.ManualAdjustment, and
// becomes the latter), is its apf.SeatPolicy (opts.SeatPolicy must be
// nil), caps flows through its apf.FlowLimiter (opts.FlowLimiter, or a
// new one when nil) and takes its borrowing options and clock from opts.
// It reports every bad field of both at once; on error nothing is left
// running. Close the Controller after the Coordinator.
func Join(objects *flowschema.Config, opts apf.Options, cfg CoordinatorConfig) (*apf.Controller, *Coordinator, error) {
	var errs []error
	ex, err := NewExchange(ExchangeConfig{Replica: cfg.Replica, Store: cfg.Store, StaleAfter: cfg.StaleAfter})
	if err != nil {
		errs = append(errs, err)
	}
	if cfg.Period < 0 {
		errs = append(errs, fmt.Errorf("fleet: CoordinatorConfig.Period=%v must not be negative", cfg.Period))
	}
	if cfg.Timeout < 0 {
		errs = append(errs, fmt.Errorf("fleet: CoordinatorConfig.Timeout=%v must not be negative", cfg.Timeout))
	}
	if opts.AdjustPeriod != 0 && opts.AdjustPeriod != apf.ManualAdjustment {
		errs = append(errs, fmt.Errorf("fleet: apf.Options.AdjustPeriod=%v: the Coordinator runs the adjustment every CoordinatorConfig.Period; leave it 0", opts.AdjustPeriod))
	}
	if opts.SeatPolicy != nil {
		errs = append(errs, fmt.Errorf("fleet: apf.Options.SeatPolicy=%T: the Coordinator is the controller's seat policy; leave it nil", opts.SeatPolicy))
	}
	if err := opts.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	switch {
	case cfg.Period == 0 && cfg.GoAway != nil:
		cfg.Period = DefaultSteeringPeriod
	case cfg.Period == 0:
		cfg.Period = DefaultPeriod
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = cfg.Period / 2
	}
	if cfg.Clock == nil {
		cfg.Clock = opts.Clock
	}
	if cfg.Clock == nil {
		cfg.Clock = fairqueue.RealClock{}
	}
	if opts.FlowLimiter == nil {
		opts.FlowLimiter = apf.NewFlowLimiter()
	}
	co := &Coordinator{cfg: cfg, ex: ex, limiter: opts.FlowLimiter, borrowing: opts.Borrowing, stop: make(chan struct{}), done: make(chan struct{})}
	opts.AdjustPeriod, opts.SeatPolicy = apf.ManualAdjustment, co
	ctl, err := apf.New(objects, opts)
	if err != nil {
		return nil, nil, err
	}
	co.ctl = ctl
	return ctl, co, nil
}

// CurrentLimits is the Coordinator as the controller's apf.SeatPolicy:
// the fleet's level limits of the last round, or nil (the controller's
// own borrowing) while it has none.
func (c *Coordinator) CurrentLimits(time.Time) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.decided
}

// decide makes levels the fleet's level limits (nil: none) and, if that
// changes anything, has the controller put them in force now.
func (c *Coordinator) decide(now time.Time, levels map[string]int) {
	c.mu.Lock()
	changed := levels != nil || c.decided != nil
	c.decided = levels
	c.mu.Unlock()
	if changed {
		c.ctl.Replan(now)
	}
}

// GoAway returns CoordinatorConfig.GoAway, for HandlerOptions.GoAway.
func (c *Coordinator) GoAway() *apf.TargetedGoAway { return c.cfg.GoAway }

// Round runs one round at now: the adjustment, the exchange (its store
// calls bounded by ctx and Timeout) and the decisions. A store error is
// returned after the decisions are taken on the peers still known.
func (c *Coordinator) Round(ctx context.Context, now time.Time) error {
	// The fleet's last decision (the policy's answer) stays in force
	// through the adjustment and the exchange, so nothing is dispatched at
	// this replica's own borrowing result in between; without one (a
	// fleet of one so far) this is the plain adjustment.
	c.ctl.AdjustBorrowing(now)
	period := c.cfg.Period
	if !c.last.IsZero() && now.After(c.last) {
		period = now.Sub(c.last)
	}
	c.last = now
	own, names := c.summary(now, period.Seconds())
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	peers, err := c.ex.Round(ctx, own)
	cancel()
	c.mu.Lock()
	c.peers = len(peers)
	c.mu.Unlock()
	own.Replica = c.cfg.Replica
	c.targetGoAway(own, peers, names)
	if len(peers) == 0 || c.cfg.TargetOnly {
		c.limiter.SetCaps(nil)
		c.decide(now, nil)
		return err
	}
	c.decide(now, LevelLimits(own, peers, c.borrowing))
	caps := map[apf.FlowKey]float64{}
	for _, l := range own.Levels {
		for name, cp := range FlowCaps(l.Name, own, peers) {
			if k, ok := names[flowRef{l.Name, name}]; ok && !c.targets[k] {
				caps[k] = cp
			}
		}
	}
	c.limiter.SetCaps(caps)
	return err
}

// flowRef is how a Summary names a flow: its level and FlowName.
type flowRef struct{ level, name string }

// targetGoAway aims GoAway at the flows Steered finds worth moving.
func (c *Coordinator) targetGoAway(own Summary, peers []Summary, names map[flowRef]apf.FlowKey) {
	g := c.cfg.GoAway
	if g == nil {
		return
	}
	c.targets = map[apf.FlowKey]bool{}
	var keys []apf.FlowKey
	for _, f := range Steered(own, peers) {
		if k, ok := names[flowRef{f.Level, f.Flow}]; ok {
			keys = append(keys, k)
			c.targets[k] = true
		}
	}
	g.SetTargets(keys)
}

// Peers returns how many peers the last round decided with (0: alone).
func (c *Coordinator) Peers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peers
}

// FlowName is how a flow is named in a Summary: its FlowSchema and
// distinguisher.
func FlowName(k apf.FlowKey) string { return k.FlowSchema + "/" + k.Distinguisher }

// summary builds this replica's summary of a period of seconds, and the
// flows it names, by level and name.
func (c *Coordinator) summary(now time.Time, seconds float64) (Summary, map[flowRef]apf.FlowKey) {
	s := Summary{ServerConcurrencyLimit: c.ctl.ServerConcurrencyLimit()}
	for name, l := range c.ctl.Limits() {
		s.Levels = append(s.Levels, LevelDemand{
			Name: name, CurrentCL: l.Borrowed, // the replica's own borrowing result, not the fleet's
			Limits: seats.LevelLimits{Name: name, NominalCL: l.Nominal, LendableCL: l.Lendable, BorrowingCL: l.Borrowing,
				MinCL: l.Lower, MaxCL: l.Upper, MaxSeats: int(l.MaxSeats)},
			Demand: seats.SeatDemand{Average: l.DemandAverage, StdDev: l.DemandStdDev,
				HighWatermark: int(l.DemandHighWatermark), Smoothed: l.DemandSmoothed},
		})
	}
	slices.SortFunc(s.Levels, func(a, b LevelDemand) int { return strings.Compare(a.Name, b.Name) })
	usage := c.limiter.TakeUsage(now) // heaviest first
	if len(usage) > MaxTopFlows {
		usage = usage[:MaxTopFlows]
	}
	names := make(map[flowRef]apf.FlowKey, len(usage))
	for _, u := range usage {
		name := FlowName(u.Flow)
		names[flowRef{u.Flow.PriorityLevel, name}] = u.Flow
		s.Flows = append(s.Flows, FlowDemand{Level: u.Flow.PriorityLevel, Flow: name,
			Seats: u.SeatSeconds / seconds, Demand: (max(u.SeatSeconds, u.InUseSeatSeconds) + u.RefusedSeatSeconds) / seconds})
	}
	askedFor(&s)
	return s, names
}

// askedFor raises each level's seat demand in s to what its flows asked
// for, if more: the level's statistics miss the requests a cap refused at
// arrival, and the fleet's level limits, which follow the demand, would
// otherwise shrink with the caps.
func askedFor(s *Summary) {
	asked := map[string]float64{}
	for _, f := range s.Flows {
		asked[f.Level] += f.Demand
	}
	for i := range s.Levels {
		d := &s.Levels[i].Demand
		a := asked[s.Levels[i].Name]
		d.Average, d.Smoothed = max(d.Average, a), max(d.Smoothed, a)
	}
}

// Start runs a round every Period in a goroutine, until Close. Errors of
// the store are not reported: the rounds go on, deciding alone while the
// store is unreachable. Start does nothing the second time.
func (c *Coordinator) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return
	}
	c.started = true
	go c.run()
}

func (c *Coordinator) run() {
	defer close(c.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		tick := make(chan struct{})
		t := c.cfg.Clock.AfterFunc(c.cfg.Period, func() { close(tick) })
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-tick:
		}
		_ = c.Round(ctx, c.cfg.Clock.Now())
	}
}

// Close stops Start's rounds, waiting for one that is running (its store
// calls are cancelled). It leaves the controller's limits and caps as
// they are. Close is idempotent.
func (c *Coordinator) Close() {
	c.mu.Lock()
	started := c.started
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.mu.Unlock()
	if started {
		<-c.done
	}
}
