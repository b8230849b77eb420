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
// # Steering
//
// With a GoAway (apf.TargetedGoAway) each round also picks the flows worth
// moving (Steered) and targets them; the Controller's Handler closes the
// HTTP/2 connection of a targeted flow's request, at most one per flow
// per interval, so that the client reconnects through its balancer. The
// signal is the replica's own summary beside its peers': a flow is moved
// when it waits or is refused here (it asks for more than SteerWaiting
// times what it holds) and either some peer is under SteerPressed as
// pressed for the level (seat demand per server seat: the seats
// upstream's borrowing lets the level hold there, which coordination does
// not move), or the flow holds under SteerBelowShare of its fleet max-min
// fair share and some replica has none of it.
//
// The model: a moved client's requests still queued on the replica it
// left are served there (HTTP/2 lets open streams finish at a GOAWAY), so
// a heavy flow moved every round or two keeps a backlog on each replica
// it visited and gets a share on every one, which is what upstream's
// random GOAWAY (--goaway-chance) achieves by closing every connection
// now and then; steering closes only the connections of flows that wait
// where they are while a move would help, and stops when the replicas
// are as pressed and the flow holds its share. Targeted flows are left
// out of FlowCaps: a cap computed from where a flow was would refuse it
// where it goes. Steering needs fresh summaries: with a GoAway the rounds
// run every DefaultSteeringPeriod unless CoordinatorConfig.Period says
// otherwise.
//
// In the simulator's steering matrix (fairslice fleet --matrix: 3 to 5
// replicas, 1 to 4 heavy clients pinned to one replica, 0 to 8 light
// flows, with and without a flow spread everywhere) targeted steering
// rejects no more while the servers' seats idle than the better of random
// GOAWAY at 0.001 and 0.02 (within 10%, +5), keeps Jain's index at 0.95
// or more and serves at least 97% of the best goodput in 9 or 10 of 10
// cells, coordinated or not, on seeds it was not tuned on, closing about
// a quarter of the connections random 0.02 closes.
//
// What it costs: one close per targeted flow per interval (a client's
// reconnection: a TLS handshake), a Store round every second per replica
// (a Lease write and a list with package kube/fleetlease), and Steered's
// fair share, O(flows² · 2^replicas) per level per round, off the
// request path.
//
// # Failure modes
//
// LevelLimits follows where the fleet's demand is, not where it could
// go: while heavy clients are pinned by long-lived connections to one
// replica, its peers' limits for their level fall with their small
// demand, and the seats the level could borrow there stay idle, also
// for the clients a GOAWAY moves there until the next rounds raise them.
// In the simulator (fairslice fleet --matrix), with three heavy clients
// on one of three replicas and targeted steering, the fleet serves 80.6
// seats coordinated against 99 uncoordinated; judge coordination by
// goodput and by rejections while the servers' seats idle, not against
// the limits it sets.
//
// Steering was chosen on the simulator's clients, which send requests
// whatever their answers and leave a backlog queued where they were. A
// closed-loop client (a fixed set of workers on one connection, as
// client-go's are) leaves none: its demand follows its connection, and on
// real servers (three replicas, three such clients pinned to one) the
// rule moves every heavy client about once a round, serving 60–80% more
// than without GOAWAY but rejecting hundreds of requests while a third
// of the seats idle. Steering moves clients only where their balancer
// sends a new connection and only on HTTP/2 (an HTTP/1 client keeps its
// connection).
// It sees a replica's MaxTopFlows heaviest flows only; a peer busy with
// flows outside its top ones looks as if it lacked the flow moved there.
// Where coordination alone already gives every flow its share (heavy
// clients pinned one to a replica), steering adds moves it did not need:
// in the simulator (fairslice fleet --replicas 3 --spread 1 --balancer
// pinned --coordinate=true) it serves 86.2 seats with a targeted GOAWAY
// against 94.6 without; a flow's Seats in a summary counts the requests
// that finished in the round, which rounds as short as the requests make
// noisy. A flow moved every round pays a reconnection a second while it
// waits everywhere; with caps that wait (apf.NewHoldingFlowLimiter) random
// GOAWAY at 0.02 does better than steering in the simulator's
// coordinated cells.
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
