package fleetsim

import (
	"math"
	"slices"

	"github.com/fairslice/fairslice/apf/fleet"
)

// Result is what a run measured.
type Result struct {
	// Flows are in Config.Flows order.
	Flows []FlowResult
	// Replicas are in index order.
	Replicas []ReplicaResult
	// Jain is Jain's fairness index over the flows' Share/FairShare,
	// (Σx)²/(n·Σx²), flows with no fair share left out: 1 when every
	// flow got the same proportion of its fair share.
	Jain float64
	// UtilisationSpread is the most Utilisation of a replica over the
	// least (+Inf if some replica executed nothing while another did; 1
	// if none did).
	UtilisationSpread float64
	// Requests, Rejected (any reason) and RejectedWhileIdle (rejected
	// while at least 30% of the fleet's seats of the level, the replicas'
	// current limits, executed nothing) count requests; GoAways counts
	// connections closed.
	Requests, Rejected, RejectedWhileIdle, GoAways int
	// RejectedWhileServersIdle counts the requests rejected while at
	// least 30% of the fleet's server seats for the level executed
	// nothing, a replica's server seats being the most the level may hold
	// there under upstream's borrowing (its nominal limit plus what the
	// other levels may lend, within its borrowing limit): a number that
	// coordination, which lowers an idle replica's current limit, does
	// not move.
	RejectedWhileServersIdle int
	// Goodput is the seat-seconds the level executed per second of the
	// measured time, over the fleet.
	Goodput float64
}

// FlowResult is one flow's outcome.
type FlowResult struct {
	Name string
	// Demand is the seats the flow would hold unhindered (Rate × Seats ×
	// Execution; Clients × Workers × Seats for a closed loop) and Lands the replicas its requests could reach: those
	// its long-lived connections were on when GOAWAY is off, else all.
	Demand float64
	Lands  []int
	// SeatSeconds is what its requests executed.
	SeatSeconds float64
	// Share is SeatSeconds over the fleet's seat-seconds of the level;
	// FairShare is its max-min fair allocation (fleet.MaxMinFair of the
	// replicas' mean seats, its Demand and Lands) over the same.
	Share, FairShare float64
	// Requests sent, dispatched and rejected; the rest were still waiting
	// at the end.
	Requests, Dispatched, Rejected int
}

// ReplicaResult is one replica's use of the level's seats.
type ReplicaResult struct {
	// Seats is the level's mean current limit over the run, SeatSeconds
	// what executed, Utilisation the one over the other's total.
	Seats, SeatSeconds, Utilisation float64
	// ServerSeats is the most seats the level may hold on the replica
	// under upstream's borrowing (see Result.RejectedWhileServersIdle).
	ServerSeats int
}

// result computes the Result of the finished run.
func (s *sim) result() (*Result, error) {
	res := &Result{
		Requests: s.stats.requests, Rejected: s.stats.rejected,
		RejectedWhileIdle: s.stats.rejectedWhileIdle, GoAways: s.stats.goaways,
		RejectedWhileServersIdle: s.stats.rejectedWhileServersIdle,
	}
	secs := (s.cfg.Duration - s.cfg.Warmup).Seconds()
	capacity := make([]float64, len(s.replicas))
	total := 0.0
	for i, r := range s.replicas {
		capacity[i] = r.seatSec / secs
		total += r.seatSec
		rr := ReplicaResult{Seats: capacity[i], SeatSeconds: r.used, ServerSeats: r.serverSeats}
		res.Goodput += r.used / secs
		if r.seatSec > 0 {
			rr.Utilisation = r.used / r.seatSec
		}
		res.Replicas = append(res.Replicas, rr)
	}
	demands := make([]fleet.Demand, len(s.cfg.Flows))
	for i, f := range s.cfg.Flows {
		seats := f.Seats
		if m := int(s.replicas[0].maxSeat); m > 0 {
			seats = min(seats, m)
		}
		demands[i].Seats = f.Rate * float64(seats) * f.Execution.Seconds()
		if f.Workers > 0 { // a closed loop holds at most its workers' seats
			demands[i].Seats = float64(max(1, f.Clients) * f.Workers * seats)
		}
		if s.cfg.GoAway.Mode == GoAwayOff {
			for r := range s.flows[i].lands {
				demands[i].Replicas = append(demands[i].Replicas, r)
			}
			slices.Sort(demands[i].Replicas)
		}
	}
	fair, err := fleet.MaxMinFair(capacity, demands)
	if err != nil {
		return nil, err
	}
	var ratios []float64
	for i, f := range s.cfg.Flows {
		fs := &s.flows[i]
		fr := FlowResult{
			Name: f.Name, Demand: demands[i].Seats, Lands: demands[i].Replicas, SeatSeconds: fs.seatSeconds,
			Requests: fs.requests, Dispatched: fs.dispatched, Rejected: fs.rejected,
		}
		if len(fr.Lands) == 0 {
			for r := range s.replicas {
				fr.Lands = append(fr.Lands, r)
			}
		}
		if total > 0 {
			fr.Share, fr.FairShare = fs.seatSeconds/total, fair[i]*secs/total
		}
		if fr.FairShare > 0 {
			ratios = append(ratios, fr.Share/fr.FairShare)
		}
		res.Flows = append(res.Flows, fr)
	}
	res.Jain = jain(ratios)
	res.UtilisationSpread = spread(res.Replicas)
	return res, nil
}

// jain is Jain's fairness index of xs, 1 for none.
func jain(xs []float64) float64 {
	sum, squares := 0.0, 0.0
	for _, x := range xs {
		sum += x
		squares += x * x
	}
	if squares == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * squares)
}

// spread is the most utilisation over the least.
func spread(rs []ReplicaResult) float64 {
	lo, hi := math.Inf(1), 0.0
	for _, r := range rs {
		lo, hi = min(lo, r.Utilisation), max(hi, r.Utilisation)
	}
	switch {
	case hi == 0:
		return 1
	case lo == 0:
		return math.Inf(1)
	}
	return hi / lo
}
