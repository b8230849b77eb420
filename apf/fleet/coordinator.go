package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

// CoordinatorConfig configures a Coordinator.
type CoordinatorConfig struct {
	// Replica is this replica's name, unique in the fleet. Required.
	Replica string
	// Store is where the fleet's summaries go. Required.
	Store Store
	// Controller is this replica's controller, created with
	// Options.AdjustPeriod = apf.ManualAdjustment (the Coordinator runs
	// its borrowing adjustment, then sets the fleet's level limits) and
	// Options.FlowLimiter = Limiter. Required.
	Controller *apf.Controller
	// Limiter is the Controller's FlowLimiter: its usage makes the
	// summary's flows, and the fleet's caps go into it. Required.
	Limiter *apf.FlowLimiter
	// Period is how often Start runs a round; 0 means DefaultPeriod.
	Period time.Duration
	// Timeout bounds one round's calls to the Store; 0 means Period/2.
	Timeout time.Duration
	// StaleAfter is ExchangeConfig.StaleAfter.
	StaleAfter int
	// Borrowing are the Controller's Options.Borrowing, for LevelLimits.
	Borrowing flowschema.BorrowingOptions
	// Clock times Start's rounds; default fairqueue.RealClock.
	Clock fairqueue.Clock
	// GoAway, if set, is targeted every round at the flow asking for the
	// most seats here while the replica is Overloaded and moving that
	// flow helps (MoveHelps), and at nothing otherwise; give the same one
	// to the Controller's Handler (HandlerOptions.GoAway).
	GoAway *apf.TargetedGoAway
	// GoAwayCooldown is how many rounds, starting with the first round
	// after GoAway closed a connection, it targets no other flow, so that
	// the summaries show where the moved client went before another is
	// moved (they lag a round behind a move); the closed flow stays
	// targeted, so that a client that reconnected here is moved again.
	// 0 means DefaultGoAwayCooldown.
	GoAwayCooldown int
	// TargetOnly makes the rounds exchange summaries and aim GoAway only:
	// no fleet level limits and no caps are set, so every admission
	// decision stays the Controller's own (its borrowing adjustment still
	// runs every round).
	TargetOnly bool
}

// DefaultGoAwayCooldown is CoordinatorConfig.GoAwayCooldown's default:
// the round after a close, whose summaries still show the client where
// it was, and the next one.
const DefaultGoAwayCooldown = 2

// Coordinator runs one replica's part of the fleet on an apf.Controller:
// every round it runs the controller's borrowing adjustment (exactly
// today's, alone, while no fleet decision is held; else holding the
// fleet's level limits of the round before, AdjustBorrowingHolding),
// builds the replica's Summary from the controller's level statistics
// and its FlowLimiter's usage, runs the Exchange, and applies both
// decisions: LevelLimits as the controller's current limits and FlowCaps
// as the FlowLimiter's caps. With no peers (a fleet of one, or a store
// unreachable for StaleAfter rounds) neither decision is taken, the caps
// are removed and the levels get the adjustment's own limits back: every
// decision is the controller's alone.
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
	cfg  CoordinatorConfig
	ex   *Exchange
	last time.Time // of the previous round; zero before the first
	// held is the fleet's level limits set at the previous round, kept
	// through the next adjustment; nil when the controller's own apply.
	held map[string]int

	closedSeen int    // GoAway.Closed() at the previous round
	targeted   string // level and name of the flow GoAway targets, "" none
	// moved is the flow (level and name) whose connection GoAway closed
	// since the previous round, "" none: left out of this round's caps.
	moved string
	quiet int // rounds left in which GoAway targets nothing

	mu      sync.Mutex
	peers   int
	stop    chan struct{}
	done    chan struct{}
	started bool
}

// NewCoordinator returns a Coordinator, or an error naming every bad field.
func NewCoordinator(cfg CoordinatorConfig) (*Coordinator, error) {
	var errs []error
	ex, err := NewExchange(ExchangeConfig{Replica: cfg.Replica, Store: cfg.Store, StaleAfter: cfg.StaleAfter})
	if err != nil {
		errs = append(errs, err)
	}
	if cfg.Controller == nil {
		errs = append(errs, errors.New("fleet: CoordinatorConfig.Controller is nil"))
	}
	if cfg.Limiter == nil {
		errs = append(errs, errors.New("fleet: CoordinatorConfig.Limiter is nil"))
	}
	if cfg.Period < 0 {
		errs = append(errs, fmt.Errorf("fleet: CoordinatorConfig.Period=%v must not be negative", cfg.Period))
	}
	if cfg.GoAwayCooldown < 0 {
		errs = append(errs, fmt.Errorf("fleet: CoordinatorConfig.GoAwayCooldown=%d must not be negative", cfg.GoAwayCooldown))
	}
	if cfg.Timeout < 0 {
		errs = append(errs, fmt.Errorf("fleet: CoordinatorConfig.Timeout=%v must not be negative", cfg.Timeout))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = cfg.Period / 2
	}
	if cfg.GoAwayCooldown == 0 {
		cfg.GoAwayCooldown = DefaultGoAwayCooldown
	}
	if cfg.Clock == nil {
		cfg.Clock = fairqueue.RealClock{}
	}
	return &Coordinator{cfg: cfg, ex: ex, stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// Round runs one round at now: the adjustment, the exchange (its store
// calls bounded by ctx and Timeout) and the decisions. A store error is
// returned after the decisions are taken on the peers still known.
func (c *Coordinator) Round(ctx context.Context, now time.Time) error {
	ctl := c.cfg.Controller
	// The fleet's last decision stays in place through the adjustment and
	// the exchange, so nothing is dispatched at this replica's own
	// borrowing result in between; without one (a fleet of one so far)
	// this is the plain adjustment.
	local := ctl.AdjustBorrowingHolding(now, c.held)
	period := c.cfg.Period
	if !c.last.IsZero() && now.After(c.last) {
		period = now.Sub(c.last)
	}
	c.last = now
	own, names := c.summary(now, period.Seconds(), local)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	peers, err := c.ex.Round(ctx, own)
	cancel()
	c.mu.Lock()
	c.peers = len(peers)
	c.mu.Unlock()
	own.Replica = c.cfg.Replica
	c.targetGoAway(own, peers, names)
	if len(peers) == 0 || c.cfg.TargetOnly {
		c.cfg.Limiter.SetCaps(nil)
		c.release(now, local)
		return err
	}
	if levels := LevelLimits(own, peers, c.cfg.Borrowing); levels != nil {
		set := maps.Clone(levels)
		for name := range c.held {
			if _, ok := set[name]; !ok {
				set[name] = local[name] // held before, not decided now: its own again
			}
		}
		ctl.SetCurrentLimits(now, set)
		c.held = levels
	} else {
		c.release(now, local)
	}
	caps := map[apf.FlowKey]float64{}
	capOwn := own
	if c.moved != "" {
		capOwn.Flows = slices.DeleteFunc(slices.Clone(own.Flows), func(f FlowDemand) bool { return f.Level+"\x00"+f.Flow == c.moved })
	}
	for _, l := range own.Levels {
		for name, cp := range FlowCaps(l.Name, capOwn, peers) {
			if k, ok := names[l.Name+"\x00"+name]; ok {
				caps[k] = cp
			}
		}
	}
	c.cfg.Limiter.SetCaps(caps)
	return err
}

// release gives the controller back its own borrowing result, local,
// when a fleet decision was held through the round and none follows it.
func (c *Coordinator) release(now time.Time, local map[string]int) {
	if c.held != nil {
		c.cfg.Controller.SetCurrentLimits(now, local)
		c.held = nil
	}
}

// targetGoAway aims GoAway at this replica's heaviest flow while it is
// Overloaded and the move helps; within GoAwayCooldown rounds of a close
// it leaves the target as it is.
func (c *Coordinator) targetGoAway(own Summary, peers []Summary, names map[string]apf.FlowKey) {
	g := c.cfg.GoAway
	if g == nil {
		return
	}
	c.moved = ""
	if closed := g.Closed(); closed != c.closedSeen {
		c.closedSeen, c.quiet = closed, c.cfg.GoAwayCooldown
		c.moved = c.targeted
	}
	switch f, ok := heaviest(own); {
	case c.quiet > 0:
		// Leave the closed flow targeted: only its requests that arrive
		// after the close (its client came back here) close again.
	case ok && Overloaded(own, peers) && MoveHelps(own, f, peers):
		c.targeted = f.Level + "\x00" + f.Flow
		g.Target(names[c.targeted], true)
	default:
		c.targeted = ""
		g.Target(apf.FlowKey{}, false)
	}
	c.quiet = max(0, c.quiet-1)
}

// heaviest returns the flow of own asking for the most seats (its
// Demand: the seats it held, waited for and was refused), the first of
// equals; false if own has none. Demand, not the seats held, because a
// client just moved away still holds seats here while its queued requests
// are served, but asks for nothing more.
func heaviest(own Summary) (FlowDemand, bool) {
	if len(own.Flows) == 0 {
		return FlowDemand{}, false
	}
	best := own.Flows[0]
	for _, f := range own.Flows[1:] {
		if f.Demand > best.Demand {
			best = f
		}
	}
	return best, true
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
func (c *Coordinator) summary(now time.Time, seconds float64, local map[string]int) (Summary, map[string]apf.FlowKey) {
	ctl := c.cfg.Controller
	s := Summary{ServerConcurrencyLimit: ctl.ServerConcurrencyLimit()}
	for name, l := range ctl.Limits() {
		cl := l.Current
		if v, ok := local[name]; ok {
			cl = v // the replica's own borrowing result, not the fleet's held limit
		}
		s.Levels = append(s.Levels, LevelDemand{
			Name: name, CurrentCL: cl,
			Limits: flowschema.LevelLimits{Name: name, NominalCL: l.Nominal, LendableCL: l.Lendable, BorrowingCL: l.Borrowing,
				MinCL: l.Lower, MaxCL: l.Upper, MaxSeats: int(l.MaxSeats)},
			Demand: flowschema.SeatDemand{Average: l.DemandAverage, StdDev: l.DemandStdDev,
				HighWatermark: int(l.DemandHighWatermark), Smoothed: l.DemandSmoothed},
		})
	}
	slices.SortFunc(s.Levels, func(a, b LevelDemand) int { return strings.Compare(a.Name, b.Name) })
	usage := c.cfg.Limiter.TakeUsage(now) // heaviest first
	if len(usage) > MaxTopFlows {
		usage = usage[:MaxTopFlows]
	}
	names := make(map[string]apf.FlowKey, len(usage))
	for _, u := range usage {
		name := FlowName(u.Flow)
		names[u.Flow.PriorityLevel+"\x00"+name] = u.Flow
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
