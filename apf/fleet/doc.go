// Package fleet coordinates API Priority and Fairness (package apf)
// across the replicas of a server, so that fair shares hold for the whole
// fleet rather than per replica.
//
// # Model
//
// Every period (DefaultPeriod, upstream's 10 s borrowing period) each
// replica publishes a Summary to a Store and reads the others' (an
// Exchange does both; MemoryStore is the in-memory Store, the Lease store
// lives in the kube module). A summary holds, per priority level, the
// statistics borrowing already keeps (limits and seat demand), and the
// replica's heaviest flows (at most MaxTopFlows) with the seats they held
// and asked for. From its own summary and its peers' a replica takes two
// decisions, both pure functions:
//
//   - LevelLimits: each level's current limit, so that the fleet's seats
//     follow the fleet's demand (upstream's borrowing over the fleet,
//     within each level's bounds summed over the replicas, a replica's
//     levels adding up to at most the seats its own borrowing divides);
//   - FlowCaps: the most seats each heavy flow may hold on this replica,
//     its fleet-wide max-min fair share (MaxMinFair) minus what the plan
//     has the other replicas give it, so that a flow present on several
//     replicas gets one share in total, and a flow pinned to a busy
//     replica keeps its share there.
//
// Join builds an apf.Controller and the Coordinator that runs both
// decisions on it, with what they share stated once: the Coordinator is
// the controller's apf.SeatPolicy and runs its borrowing adjustment, and
// the controller's apf.FlowLimiter enforces the caps. Each round (Round
// at the caller's time, or Start's own goroutine) runs the controller's
// adjustment (the controller asks the Coordinator inside it, so the
// fleet's level limits of the round before stay in force through it and
// the exchange: no queued request is dispatched at the replica's own
// borrowing result in between), builds the Summary from the controller's
// level statistics (each level's Limits.Borrowed, the replica's own
// borrowing result, as its CurrentCL) and the FlowLimiter's per-flow
// seat-seconds, exchanges it, and takes the decisions: LevelLimits as the
// Coordinator's answer to the controller (put in force at once by
// Controller.Replan), FlowCaps as the FlowLimiter's caps, which
// Wait enforces (a capped flow's request is refused with
// concurrency-limit on arrival, or at dispatch if it queued before the
// cap came down; with an apf.NewHoldingFlowLimiter given in
// apf.Options.FlowLimiter it waits instead, outside the queue set, until
// its flow's seats let it in). The request path pays one mutex and one map lookup at
// arrival, dispatch and finish; the store is called only in rounds.
//
// With a GoAway (apf.TargetedGoAway) the round also aims it: at the
// flow asking for the most seats here (held, waiting and refused; a
// client just moved away still holds seats while its queued requests are
// served, but asks for nothing more), while the replica is Overloaded and
// MoveHelps (the other flows fill the level here, and a peer has the
// flow's seats idle; else the move only swaps which replica idles). After
// a close it targets no other flow for GoAwayCooldown rounds, while the
// summaries catch up with the move, but keeps the closed flow targeted:
// a request of it that arrives after the close means its client
// reconnected here (a balancer may place a new connection anywhere), and
// closing that connection too moves it again. A request that arrived
// before the close may be on the closed connection and closes nothing.
// In the round right after a close, the closed flow is left out of the
// replica's own summary when its caps are computed: its demand there is
// the period's before the move, and counting it would hold the flows
// that stay to shares of a level the moved client no longer uses.
//
// # Failure modes
//
// LevelLimits follows where the fleet's demand is, not where it could
// go: while heavy clients are pinned by long-lived connections to one
// replica, its peers' limits for their level fall with their small
// demand, and the seats the level could borrow there stay idle, also
// for the clients a GOAWAY moves there. In the simulator (fairslice
// fleet --matrix), with three heavy clients on one of three replicas and
// targeted GOAWAY, the fleet serves 49 seats coordinated against 99
// uncoordinated; judge coordination by goodput and by rejections while
// the servers' seats idle, not against the limits it sets.
//
// With no peers (a fleet of one replica, or a store that has been
// unreachable for a few periods) both decisions are nil: the replica
// decides alone, exactly as without a fleet. A peer whose summaries stop
// advancing is forgotten after DefaultStaleAfter of the reader's periods.
// Summaries carry their publisher's own period counter, never a wall-clock
// time, so clock skew between replicas does not matter. Nothing here runs
// on a request's path: the caller runs Exchange.Round off it.
//
// # Mapping to Kubernetes
//
// KEP-1040 (APF) leaves coordination between kube-apiserver replicas
// out; every limit upstream enforces is per replica. This package is
// beyond upstream.
package fleet
