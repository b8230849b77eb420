package fleet

import (
	"cmp"
	"slices"
)

// FlowCaps decides, for priority level level on the replica that
// published own, the most seats each heavy flow may hold there, so that
// the fleet as a whole gives every flow its max-min fair share: a flow
// present on several replicas gets one share in total, and a flow pinned
// to a busy replica gets its share there because the others are held
// back. A flow absent from the result is not capped. With no peers (a
// fleet of one, or the store unreachable) the result is nil: the replica
// decides alone, as without a fleet.
//
// The steps: the fleet's max-min fair allocation (MaxMinFair) of the
// replicas' current limits of the level among the flows' fleet-wide
// demands, each flow landing where it is present; then the plan, which
// splits each flow's allocation over its replicas, the flows present on
// fewest replicas first, each in proportion to the seats its replicas
// have left; the cap on this replica is its part of the plan, that is the
// flow's fair share minus what the plan has the other replicas give it.
// Only flows asking for more than their fair share are capped. Every
// replica computes the same plan from the same summaries. The split is
// exact when every flow is present on one replica or on all; otherwise a
// flow may be planned less than its share on some replica.
//
// Flows outside a replica's top MaxTopFlows are not seen; their seats
// are counted as free. Cost: O(flows² · 2^replicas) (MaxMinFair).
func FlowCaps(level string, own Summary, peers []Summary) map[string]float64 {
	if len(peers) == 0 {
		return nil
	}
	all := append([]Summary{own}, peers...)
	if len(all) > MaxFairShareReplicas {
		all = all[:MaxFairShareReplicas] // the fair share is computed over the first ones only
	}
	slices.SortFunc(all, func(a, b Summary) int { return cmp.Compare(a.Replica, b.Replica) })
	self := slices.IndexFunc(all, func(s Summary) bool { return s.Replica == own.Replica })
	capacity := levelSeats(level, all)
	names, demands := flowDemands(level, all)
	alloc, err := MaxMinFair(capacity, demands)
	if err != nil {
		return nil // summaries with bad numbers: decide alone
	}
	plan := split(capacity, demands, alloc)
	caps := map[string]float64{}
	for i, name := range names {
		if demands[i].Seats > alloc[i]*(1+1e-9) && slices.Contains(demands[i].Replicas, self) {
			caps[name] = plan[i][self]
		}
	}
	return caps
}

// levelSeats returns each replica's current limit of level.
func levelSeats(level string, all []Summary) []float64 {
	seats := make([]float64, len(all))
	for r, s := range all {
		seats[r] = float64(levelCL(s, level))
	}
	return seats
}

// flowDemands returns the flows of level, by name, with their fleet-wide
// demand and the replicas they are present on.
func flowDemands(level string, all []Summary) ([]string, []Demand) {
	byName := map[string]int{}
	var names []string
	var demands []Demand
	for r, s := range all {
		for _, f := range s.Flows {
			if f.Level != level || f.Demand <= 0 {
				continue
			}
			i, ok := byName[f.Flow]
			if !ok {
				i = len(names)
				byName[f.Flow] = i
				names = append(names, f.Flow)
				demands = append(demands, Demand{})
			}
			demands[i].Seats += f.Demand
			demands[i].Replicas = append(demands[i].Replicas, r)
		}
	}
	return names, demands
}

// split returns plan[flow][replica]: each flow's allocation spread over
// its replicas, flows on fewest replicas first, each in proportion to the
// seats left on its replicas.
func split(capacity []float64, demands []Demand, alloc []float64) [][]float64 {
	left := slices.Clone(capacity)
	order := make([]int, len(demands))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(demands[a].Replicas), len(demands[b].Replicas)) })
	plan := make([][]float64, len(demands))
	for _, i := range order {
		plan[i] = make([]float64, len(capacity))
		free := 0.0
		for _, r := range demands[i].Replicas {
			free += left[r]
		}
		for _, r := range demands[i].Replicas {
			plan[i][r] = alloc[i] / float64(len(demands[i].Replicas))
			if free > 0 {
				plan[i][r] = min(left[r], alloc[i]*left[r]/free)
			}
		}
		for _, r := range demands[i].Replicas {
			left[r] = max(0, left[r]-plan[i][r])
		}
	}
	return plan
}

// levelCL is the current limit of level in s, 0 if s has none.
func levelCL(s Summary, level string) int {
	for _, l := range s.Levels {
		if l.Name == level {
			return l.CurrentCL
		}
	}
	return 0
}
