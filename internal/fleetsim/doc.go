// Package fleetsim simulates a fleet of servers, each running API Priority
// and Fairness (package apf) on its own, behind a load balancer, and
// measures how fairly the fleet as a whole shares its seats among flows.
//
// # Model
//
// Config.Replicas servers each run a real apf.Controller with the same
// configuration and concurrency limit, all on one simulated clock: their
// borrowing adjustments, the clients' arrivals, the requests' executions
// and wait limits are events of one queue, run one at a time in time
// order (ties in the order scheduled), so a Config always gives the same
// Result. The first Config.Warmup is run but not measured. Each Flow is a user whose requests all land in one flow of
// Config.Level (global-default of the bootstrap configuration); its
// Clients send Poisson arrivals at Rate in total, each request holding
// Seats for Execution once dispatched, or rejected (queue-full,
// concurrency-limit, or time-out at Config.WaitLimit).
//
// The balancer places the requests of clients that are not pinned:
// BalancerRoundRobin and BalancerLeastInflight per request,
// BalancerPinned per connection (a client keeps the connection it
// opened). A pinned Flow is one client on one long-lived connection on one
// replica, whatever the balancer. A GOAWAY closes a connection; the
// client's next request opens a new one through the balancer: GoAwayRandom
// closes a request's connection with a fixed chance (kube-apiserver's
// --goaway-chance), GoAwayTargeted runs the shipping policy: each
// replica's fleet.Coordinator aims an apf.TargetedGoAway at the flows
// fleet.Steered finds worth moving, and the response to a request of
// such a flow, dispatched or rejected, closes the connection the
// request came on, as the apf middleware does (a moved client's requests
// still queued on its old replica close nothing of its new connection).
//
// # Fair share
//
// A flow's Share is the seat-seconds its requests executed over the seat
// seconds the fleet's replicas gave the level (each replica's current
// limit over time, borrowing included). Its FairShare is its part of the
// max-min fair allocation of the replicas' mean seats among the flows'
// demands (Rate × Seats × Execution), subject to where each flow's
// requests can land: a flow whose connections stay where they were opened
// (GOAWAY off) can be served only on those replicas. fleet.MaxMinFair computes
// it exactly. Jain's index over Share/FairShare sums the run up: 1 when
// every flow got the same proportion of its fair share.
//
// # What users feel
//
// Goodput is the seat-seconds executed per measured second.
// RejectedWhileServersIdle counts the rejections while at least 30% of
// the fleet's server seats for the level execute nothing, a replica's
// server seats being the most the level may hold there under upstream's
// borrowing: a quantity no coordination moves. RejectedWhileIdle counts
// them against the replicas' current limits instead, which coordination
// lowers on idle replicas, so it flatters coordination. GoAways counts
// the connections closed.
//
// # Why the fleet is unfair
//
// Each replica is fair only among the flows it sees. With one flow spread
// over N replicas and N flows each pinned to one replica, every replica
// splits its seats between the spread flow and its pinned one, so the
// spread flow gets N halves, (N+1)/2 times its fair share of 1/(N+1), and
// each pinned flow (N+1)/(2N) of its own. The simulator makes such
// effects measurable, and is where coordination between replicas is to
// be tried.
//
// # Coordination
//
// With Config.Coordinate each replica runs what a server runs: a
// fleet.Coordinator over its controller (adjusting manually) and the
// controller's apf.FlowLimiter, one fleet.MemoryStore for all, a round
// every CoordinationPeriod (10 s), in replica order. Each round runs the
// controller's borrowing adjustment, publishes the levels' limits and,
// per flow, the seats it held and asked for (held plus refused, each
// refused request for the flow's mean execution time) over the period,
// sets the level limits fleet.LevelLimits decides and the caps
// fleet.FlowCaps decides. The FlowLimiter enforces the caps inside Wait:
// a request that would take its flow's seats waiting or executing there
// above its cap is refused (concurrency-limit) before it queues, and one
// dispatched over its flow's cap (it queued before the cap came down) is
// finished at once and refused. Caps are in seats; the nearest whole
// number applies. Until the first round the replicas decide
// alone; Config.Warmup keeps that start out of the measurement.
//
// # How it drives the controllers
//
// A request's Controller.Wait runs in its own goroutine, since it blocks
// while queued; the simulator waits for it at every point where the
// request's fate is decided (its arrival, its dispatch from a queue, which
// the controller's Observer reports, and its wait limit), so that one
// goroutine acts at a time. It learns that Wait is blocked in a queue from
// the request's context, whose Done Wait asks for only then. The
// simulator owns every goroutine it starts: all have ended when Run
// returns.
package fleetsim
