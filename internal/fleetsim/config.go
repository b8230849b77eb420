package fleetsim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/flowschema"
)

// Balancer is how the load balancer in front of the fleet places the
// requests of clients that are not pinned.
type Balancer string

const (
	// BalancerPinned: every client keeps the connection it opened (new
	// connections go to the replicas in turn); only a GOAWAY moves it.
	BalancerPinned Balancer = "pinned"
	// BalancerRoundRobin sends each request to the next replica in turn.
	BalancerRoundRobin Balancer = "round-robin"
	// BalancerLeastInflight sends each request (and opens each new
	// connection) to the replica with the fewest requests in flight,
	// waiting or executing; ties go to the next replica in turn.
	BalancerLeastInflight Balancer = "least-inflight"
)

// GoAwayMode is when replicas close (send HTTP/2 GOAWAY on) a client's
// connection, making it reconnect through the balancer.
type GoAwayMode string

const (
	// GoAwayOff never closes a connection.
	GoAwayOff GoAwayMode = "off"
	// GoAwayRandom closes the connection of each request with probability
	// GoAway.Chance, as kube-apiserver's --goaway-chance.
	GoAwayRandom GoAwayMode = "random"
	// GoAwayTargeted runs the shipping code: each replica's
	// fleet.Coordinator aims its apf.TargetedGoAway (CoordinatorConfig.
	// GoAway) at the flows fleet.Steered finds worth moving, and each
	// request of a client holding a connection,
	// once dispatched or rejected, asks it (TargetedGoAway.Closes), as the
	// middleware does: the response (at the rejection, or at the end of
	// the execution) closes the connection the request came on, and if
	// that is still the client's, its next request reconnects through the
	// balancer. The Coordinators run every GoAway.Period: without
	// Config.Coordinate for targeting only (CoordinatorConfig.TargetOnly:
	// no fleet level limits, no caps; their borrowing adjustment runs at
	// that period), with it with both decisions too.
	GoAwayTargeted GoAwayMode = "targeted"
)

// UpstreamGoAwayChance is the --goaway-chance kube-apiserver's
// documentation suggests (0.001, one request in a thousand).
const UpstreamGoAwayChance = 0.001

// GoAway is the GOAWAY policy of every replica.
type GoAway struct {
	// Mode is off when empty.
	Mode GoAwayMode
	// Chance is the probability per request for GoAwayRandom (0 means
	// UpstreamGoAwayChance); at most 0.02, kube-apiserver's bound.
	Chance float64
	// Period is GoAwayTargeted's TargetedGoAway interval and its rounds'
	// period, coordinated or not (0 means one second,
	// fleet.DefaultSteeringPeriod).
	Period time.Duration
}

// Flow is one flow's clients: a user whose requests are all classified
// into one flow of Config.Level.
type Flow struct {
	// Name is the user's name, the flow's distinguisher. Required, unique.
	Name string
	// Rate is the flow's requests per second over all its clients,
	// arriving as a Poisson process per client.
	Rate float64
	// Seats is each request's seats (its work estimate's initial seats,
	// capped by the level's maximum as the estimator caps it); 0 means 1.
	Seats int
	// Execution is how long a dispatched request executes. Required.
	Execution time.Duration
	// Clients is the number of clients the flow's requests come from,
	// each with its own connection under BalancerPinned; 0 means 1.
	Clients int
	// Pinned means the flow is one client on one long-lived connection,
	// opened on replica Replica, whatever the balancer; only a GOAWAY
	// moves it. Clients must then be 0 or 1.
	Pinned  bool
	Replica int
	// Workers, if more than 0, makes each of the flow's clients a closed
	// loop of that many workers, as a client with a fixed pool of workers
	// on one connection is: a worker sends its next request when its last
	// one is answered, at once after a success and ClosedLoopRetry after a
	// rejection; Rate is then ignored. 0: the open loop of Rate.
	Workers int
}

// ClosedLoopRetry is how long a closed-loop worker (Flow.Workers) waits
// after a rejection before it sends again.
const ClosedLoopRetry = 20 * time.Millisecond

// Config is a fleet simulation.
type Config struct {
	// Replicas is the number of servers. Required, at most
	// fleet.MaxFairShareReplicas.
	Replicas int
	// ServerConcurrencyLimit is each replica's apf concurrency limit in
	// seats. Required.
	ServerConcurrencyLimit int
	// FlowControl is every replica's configuration; nil means the
	// bootstrap one.
	FlowControl *flowschema.Config
	// Level is the priority level the flows' requests are classified to
	// and whose seats are measured; empty means "global-default". Each
	// flow's user is in the group system:authenticated.
	Level string
	// Flows are the clients. Required.
	Flows []Flow
	// Balancer is BalancerRoundRobin when empty.
	Balancer Balancer
	// GoAway is the replicas' GOAWAY policy.
	GoAway GoAway
	// Duration is the simulated time. Required.
	Duration time.Duration
	// WaitLimit is how long a request may wait in a queue; 0 means 15 s,
	// upstream's for a request without a deadline.
	WaitLimit time.Duration
	// Seed seeds the arrivals and the GOAWAY draws: the same Config gives
	// the same Result.
	Seed uint64
	// Warmup is the start of the run that is not measured (the replicas'
	// first adjustments and exchanges); less than Duration.
	Warmup time.Duration
	// Coordinate runs a fleet.Coordinator on every replica, all on one
	// fleet.MemoryStore, a round every CoordinationPeriod: the fleet's
	// level limits (fleet.LevelLimits) and flow caps (fleet.FlowCaps,
	// enforced by the controller's apf.FlowLimiter).
	Coordinate bool
	// CoordinationPeriod is 0 for fleet.DefaultPeriod (10 s); with
	// GoAwayTargeted the rounds run every GoAway.Period instead.
	CoordinationPeriod time.Duration
	// CapsWait has the caps of Coordinate make a flow's requests over its
	// cap wait (apf.NewHoldingFlowLimiter) instead of refusing them.
	CapsWait bool
}

// defaults returns c with its zero values replaced by their defaults.
func (c Config) defaults() Config {
	if c.Level == "" {
		c.Level = "global-default"
	}
	if c.Balancer == "" {
		c.Balancer = BalancerRoundRobin
	}
	if c.GoAway.Mode == "" {
		c.GoAway.Mode = GoAwayOff
	}
	if c.GoAway.Chance == 0 {
		c.GoAway.Chance = UpstreamGoAwayChance
	}
	if c.GoAway.Period == 0 {
		c.GoAway.Period = time.Second
	}
	if c.CoordinationPeriod == 0 {
		c.CoordinationPeriod = fleet.DefaultPeriod
	}
	if c.WaitLimit == 0 {
		c.WaitLimit = 15 * time.Second
	}
	c.Flows = append([]Flow(nil), c.Flows...)
	for i := range c.Flows {
		f := &c.Flows[i]
		if f.Seats == 0 {
			f.Seats = 1
		}
		if f.Clients == 0 {
			f.Clients = 1
		}
	}
	return c
}

// validate reports every problem of c (after defaults) at once.
func (c *Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("fleetsim: "+format, args...)) }
	if c.Replicas < 1 || c.Replicas > fleet.MaxFairShareReplicas {
		bad("Config.Replicas=%d, want 1 to %d", c.Replicas, fleet.MaxFairShareReplicas)
	}
	if c.ServerConcurrencyLimit <= 0 {
		bad("Config.ServerConcurrencyLimit=%d must be positive", c.ServerConcurrencyLimit)
	}
	if c.Duration <= 0 {
		bad("Config.Duration=%v must be positive", c.Duration)
	}
	if c.Warmup < 0 || (c.Duration > 0 && c.Warmup >= c.Duration) {
		bad("Config.Warmup=%v, want 0 or more and less than Config.Duration=%v", c.Warmup, c.Duration)
	}
	if c.CoordinationPeriod < 0 {
		bad("Config.CoordinationPeriod=%v must not be negative", c.CoordinationPeriod)
	}
	if c.WaitLimit < 0 {
		bad("Config.WaitLimit=%v must not be negative", c.WaitLimit)
	}
	switch c.Balancer {
	case BalancerPinned, BalancerRoundRobin, BalancerLeastInflight:
	default:
		bad("Config.Balancer=%q, want pinned, round-robin or least-inflight", c.Balancer)
	}
	switch c.GoAway.Mode {
	case GoAwayOff, GoAwayRandom, GoAwayTargeted:
	default:
		bad("Config.GoAway.Mode=%q, want off, random or targeted", c.GoAway.Mode)
	}
	if !(c.GoAway.Chance > 0 && c.GoAway.Chance <= 0.02) {
		bad("Config.GoAway.Chance=%v, want more than 0 and at most 0.02", c.GoAway.Chance)
	}
	if c.GoAway.Period < 0 {
		bad("Config.GoAway.Period=%v must not be negative", c.GoAway.Period)
	}
	if len(c.Flows) == 0 {
		bad("Config.Flows is empty")
	}
	names := map[string]bool{}
	for i, f := range c.Flows {
		switch {
		case f.Name == "":
			bad("Config.Flows[%d].Name is empty", i)
		case names[f.Name]:
			bad("Config.Flows[%d].Name=%q is not unique", i, f.Name)
		}
		names[f.Name] = true
		if f.Rate < 0 || math.IsNaN(f.Rate) || math.IsInf(f.Rate, 0) {
			bad("Config.Flows[%d].Rate=%v must be finite and not negative", i, f.Rate)
		}
		if f.Seats < 0 {
			bad("Config.Flows[%d].Seats=%d must not be negative", i, f.Seats)
		}
		if f.Execution <= 0 {
			bad("Config.Flows[%d].Execution=%v must be positive", i, f.Execution)
		}
		if f.Workers < 0 {
			bad("Config.Flows[%d].Workers=%d must not be negative", i, f.Workers)
		}
		if f.Clients < 0 || (f.Pinned && f.Clients > 1) {
			bad("Config.Flows[%d].Clients=%d, want 0 or more (0 or 1 when pinned)", i, f.Clients)
		}
		if f.Pinned && (f.Replica < 0 || f.Replica >= c.Replicas) {
			bad("Config.Flows[%d].Replica=%d, want 0 to %d", i, f.Replica, c.Replicas-1)
		}
	}
	return errors.Join(errs...)
}
