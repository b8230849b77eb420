package fleet

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// MaxFairShareReplicas is the most replicas MaxMinFair takes: it looks at
// every set of replicas, 2^replicas of them.
const MaxFairShareReplicas = 16

// Demand is one flow's demand, as MaxMinFair takes it.
type Demand struct {
	// Seats is the mean number of seats the flow would hold if nothing
	// held it back: its request rate times seats per request times
	// execution time.
	Seats float64
	// Replicas are the replicas the flow's requests can land on; empty
	// means every replica.
	Replicas []int
}

// MaxMinFair returns the max-min fair allocation of the replicas' seats
// (capacity, per replica) among the flows' demands, in seats per flow, in
// the order of demands: no flow gets more than its demand, every flow is
// served only where it can land, and no flow's allocation can be raised
// without lowering that of a flow that has no more.
//
// It is water-filling with placement constraints. An allocation a can be
// served if and only if, for every set R of replicas, the flows that can
// land only within R are given at most R's seats (Hall's condition of the
// bipartite flows-to-replicas graph). Every flow not yet fixed rises at
// one level t; t stops at the first flow demand reached, or at the first
// set R whose seats the flows within it exhaust; those flows are fixed at
// t (or their demand) and the rest rise on. Each round fixes at least one
// flow, so it costs O(flows² · 2^replicas).
//
// It fails, naming every bad value, on more than MaxFairShareReplicas
// replicas, a negative or non-finite capacity or demand, or a replica index
// out of range.
func MaxMinFair(capacity []float64, demands []Demand) ([]float64, error) {
	masks, err := checkFairShare(capacity, demands)
	if err != nil {
		return nil, err
	}
	n := len(capacity)
	sets := 1 << n
	seats := make([]float64, sets) // seats of each set of replicas
	for r := 1; r < sets; r++ {
		low := bits.TrailingZeros(uint(r))
		seats[r] = seats[r&(r-1)] + capacity[low]
	}
	alloc := make([]float64, len(demands))
	fixed := make([]bool, len(demands))
	left := len(demands)
	for left > 0 {
		t := nextLevel(seats, masks, demands, alloc, fixed)
		left -= fixAt(t, seats, masks, demands, alloc, fixed)
	}
	return alloc, nil
}

// checkFairShare validates MaxMinFair's arguments and returns each flow's
// set of replicas as a bit mask.
func checkFairShare(capacity []float64, demands []Demand) ([]uint32, error) {
	var errs []error
	n := len(capacity)
	if n == 0 || n > MaxFairShareReplicas {
		errs = append(errs, fmt.Errorf("fleet: %d replicas, want 1 to %d", n, MaxFairShareReplicas))
	}
	for r, c := range capacity {
		if c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
			errs = append(errs, fmt.Errorf("fleet: capacity[%d]=%v must be finite and not negative", r, c))
		}
	}
	all := uint32(1)<<min(n, MaxFairShareReplicas) - 1
	masks := make([]uint32, len(demands))
	for i, d := range demands {
		if d.Seats < 0 || math.IsNaN(d.Seats) || math.IsInf(d.Seats, 0) {
			errs = append(errs, fmt.Errorf("fleet: demands[%d].Seats=%v must be finite and not negative", i, d.Seats))
		}
		if len(d.Replicas) == 0 {
			masks[i] = all
		}
		for _, r := range d.Replicas {
			if r < 0 || r >= n || r >= MaxFairShareReplicas {
				errs = append(errs, fmt.Errorf("fleet: demands[%d].Replicas has %d, want 0 to %d", i, r, n-1))
				continue
			}
			masks[i] |= 1 << r
		}
	}
	return masks, errors.Join(errs...)
}

// nextLevel returns the level the flows not yet fixed can all rise to
// together: the least of their demands and, over every set of replicas
// that holds some of them, the seats the set has left per such flow.
func nextLevel(seats []float64, masks []uint32, demands []Demand, alloc []float64, fixed []bool) float64 {
	t := math.Inf(1)
	for i, d := range demands {
		if !fixed[i] {
			t = min(t, d.Seats)
		}
	}
	for r := 1; r < len(seats); r++ {
		if free, rising := leftIn(uint32(r), seats, masks, alloc, fixed); rising > 0 {
			t = min(t, free/float64(rising))
		}
	}
	return max(t, 0)
}

// leftIn returns the seats of the replica set r that the fixed flows
// landing only within r leave, and how many flows within r still rise.
func leftIn(r uint32, seats []float64, masks []uint32, alloc []float64, fixed []bool) (free float64, rising int) {
	free = seats[r]
	for i, m := range masks {
		if m&^r != 0 {
			continue
		}
		if fixed[i] {
			free -= alloc[i]
		} else {
			rising++
		}
	}
	return free, rising
}

// fixAt fixes, at level t, the rising flows that can rise no further: those
// whose demand t reaches (at their demand) and those within a set of
// replicas that t exhausts. It returns how many it fixed.
func fixAt(t float64, seats []float64, masks []uint32, demands []Demand, alloc []float64, fixed []bool) int {
	tol := 1e-12 * max(1, t)
	var stuck replicaSets
	for r := 1; r < len(seats); r++ {
		if free, rising := leftIn(uint32(r), seats, masks, alloc, fixed); rising > 0 && free/float64(rising) <= t+tol {
			stuck = append(stuck, uint32(r))
		}
	}
	n := 0
	for i, d := range demands {
		if fixed[i] {
			continue
		}
		switch {
		case d.Seats <= t+tol:
			alloc[i] = d.Seats
		case stuck.covers(masks[i]):
			alloc[i] = t
		default:
			continue
		}
		fixed[i] = true
		n++
	}
	if n == 0 {
		// t is one of the bounds tested above, computed the same way.
		panic(fmt.Sprintf("fleet: MaxMinFair fixed no flow at level %v", t))
	}
	return n
}

// replicaSets are sets of replicas as bit masks.
type replicaSets []uint32

// covers reports whether some set in s holds every replica of m.
func (s replicaSets) covers(m uint32) bool {
	for _, r := range s {
		if m&^r == 0 {
			return true
		}
	}
	return false
}
