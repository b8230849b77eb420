package fleet

import (
	"cmp"
	"slices"
)

// Steering's thresholds (see Steered).
const (
	// SteerWaiting is how much more than it holds a flow must ask for on
	// a replica (its Demand over its Seats) to be moved from it: it waits
	// or is refused there.
	SteerWaiting = 1.1
	// SteerBelowShare is the part of its max-min fair share of the fleet
	// below which a waiting flow is moved to a replica it is absent from.
	SteerBelowShare = 0.95
	// SteerPressed is how much less pressed than this replica (seat demand
	// per server seat of the level) a peer must be for a waiting flow to
	// be moved towards it.
	SteerPressed = 0.5
)

// Steered returns the flows of own that a targeted GOAWAY should move
// (apf.TargetedGoAway), sorted by level and name. A flow of own is moved
// when it asks here for more than SteerWaiting times the seats it holds
// (it waits or is refused here), and
//
//   - it holds less than SteerBelowShare of its max-min fair share of the
//     fleet's seats for its level, counted as if every flow could land on
//     every replica, and some replica has none of it: a move puts its
//     next requests where they get a share of their own; or
//   - some peer is less than SteerPressed as pressed for the level: its
//     seat demand per server seat (the most the level may hold there
//     under upstream's borrowing, a number coordination does not move)
//     is under SteerPressed times this replica's.
//
// A moved client's requests already queued here stay and are served here
// (HTTP/2 lets the streams open at a GOAWAY finish), so a heavy flow that
// is moved on every period holds a backlog on each replica it visited:
// it gets a share on every replica, as upstream's random GOAWAY gives
// one by moving every connection all the time, at a fraction of the
// closes. A flow that gets what it asks for here is never moved, nor is
// any flow with no peers. Cost: O(flows² · 2^replicas) per level
// (MaxMinFair).
func Steered(own Summary, peers []Summary) []FlowDemand {
	if len(peers) == 0 {
		return nil
	}
	all := append([]Summary{own}, peers...)
	if len(all) > MaxFairShareReplicas {
		all = all[:MaxFairShareReplicas]
	}
	var out []FlowDemand
	for _, level := range flowLevels(own) {
		capacity := levelSeats(level, all)
		names, demands := flowDemands(level, all)
		present := make(map[string]int, len(names)) // replicas where the flow asks for seats
		for i, name := range names {
			present[name] = len(demands[i].Replicas)
			demands[i].Replicas = nil // anywhere: a move can take a flow to any replica
		}
		alloc, err := MaxMinFair(capacity, demands)
		if err != nil {
			continue // summaries with bad numbers: move nobody
		}
		share := make(map[string]float64, len(names))
		for i, name := range names {
			share[name] = alloc[i]
		}
		held := map[string]float64{}
		for _, s := range all {
			for _, f := range s.Flows {
				if f.Level == level && f.Demand > 0 {
					held[f.Flow] += f.Seats
				}
			}
		}
		calmer := false
		ownDemand, ownSeats := pressure(own, level)
		for _, p := range peers {
			// demand/seats < SteerPressed × ownDemand/ownSeats, without dividing by 0
			demand, seats := pressure(p, level)
			calmer = calmer || demand*ownSeats < SteerPressed*ownDemand*seats
		}
		for _, f := range own.Flows {
			if f.Level != level || f.Demand <= SteerWaiting*f.Seats {
				continue
			}
			below := held[f.Flow] < SteerBelowShare*share[f.Flow] && present[f.Flow] < len(all)
			if below || calmer {
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b FlowDemand) int { return cmp.Or(cmp.Compare(a.Level, b.Level), cmp.Compare(a.Flow, b.Flow)) })
	return out
}

// flowLevels returns the levels of s's flows, sorted.
func flowLevels(s Summary) []string {
	var levels []string
	for _, f := range s.Flows {
		levels = append(levels, f.Level)
	}
	slices.Sort(levels)
	return slices.Compact(levels)
}

// pressure returns level's seat demand in s (the level's, or, if more,
// its flows' demand: the level's statistics miss the requests a cap
// refused at arrival) and its server seats there: how pressed the level
// is there is the first over the second.
func pressure(s Summary, level string) (demand, seats float64) {
	flows := 0.0
	for _, l := range s.Levels {
		if l.Name == level {
			demand = l.Demand.Average
		}
	}
	for _, f := range s.Flows {
		if f.Level == level {
			flows += f.Demand
		}
	}
	return max(demand, flows), float64(serverSeats(s, level))
}

// serverSeats is the most seats level may hold on the replica of s under
// upstream's borrowing: its nominal limit plus what every other level may
// lend, within its upper limit (0 if s has no such level).
func serverSeats(s Summary, level string) int {
	seats, upper := 0, 0
	for _, l := range s.Levels {
		if l.Name == level {
			seats += l.Limits.NominalCL
			upper = l.Limits.MaxCL
		} else {
			seats += l.Limits.LendableCL
		}
	}
	return min(seats, upper)
}
