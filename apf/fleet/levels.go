package fleet

import (
	"math"

	"github.com/fairslice/fairslice/seats"
)

// LevelLimits decides the current limit of each of own's priority levels
// so that the fleet's seats follow the fleet's demand: upstream's
// borrowing (seats.Borrow) runs once over the whole fleet, each
// level's bounds, demand and the server limits summed over the replicas
// that have it, and this replica takes of each level's fleet-wide limit
// its part of the level's fleet-wide demand (of its nominal seats when
// the level has no demand), within the level's own bounds; if that adds
// up to more than the seats the replica's own borrowing divides (the sum
// of its levels' nominal limits, which rounding up makes a little more
// than its server limit), what lies above the levels' lower bounds is
// scaled down. The result is by level name. With no peers it is
// nil: the replica's own adjustment, today's, stands.
func LevelLimits(own Summary, peers []Summary, opts seats.BorrowingOptions) map[string]int {
	if len(peers) == 0 {
		return nil
	}
	server := own.ServerConcurrencyLimit
	for _, p := range peers {
		server += p.ServerConcurrencyLimit
	}
	in := make([]seats.BorrowingLevel, len(own.Levels))
	for i, l := range own.Levels {
		in[i] = seats.BorrowingLevel{Limits: l.Limits, Demand: l.Demand, CurrentCL: l.CurrentCL}
		for _, p := range peers {
			for _, pl := range p.Levels {
				if pl.Name == l.Name {
					addLevel(&in[i], pl)
				}
			}
		}
	}
	a := seats.Borrow(server, in, opts)
	out := make(map[string]int, len(own.Levels))
	above, room := 0.0, nominalSum(own)
	want := make([]float64, len(own.Levels))
	for i, l := range own.Levels {
		part := float64(l.Limits.NominalCL) / math.Max(1, float64(in[i].Limits.NominalCL))
		if in[i].Demand.Smoothed > 0 {
			part = l.Demand.Smoothed / in[i].Demand.Smoothed
		}
		want[i] = math.Min(math.Max(float64(a.Levels[i].CurrentCL)*part, float64(l.Limits.MinCL)), float64(l.Limits.MaxCL))
		above += want[i] - float64(l.Limits.MinCL)
		room -= l.Limits.MinCL
	}
	scale := 1.0
	if above > float64(max(room, 0)) && above > 0 {
		scale = float64(max(room, 0)) / above
	}
	for i, l := range own.Levels {
		out[l.Name] = l.Limits.MinCL + int(math.Floor((want[i]-float64(l.Limits.MinCL))*scale+1e-9))
	}
	return out
}

// addLevel adds a peer's level to the fleet-wide one.
func addLevel(b *seats.BorrowingLevel, pl LevelDemand) {
	l, p := &b.Limits, &pl.Limits
	l.NominalCL += p.NominalCL
	l.LendableCL += p.LendableCL
	l.BorrowingCL += p.BorrowingCL
	l.MinCL += p.MinCL
	l.MaxCL += p.MaxCL
	l.InitialCL += p.InitialCL
	d := &b.Demand
	d.HighWatermark += pl.Demand.HighWatermark
	d.Average += pl.Demand.Average
	d.StdDev = math.Hypot(d.StdDev, pl.Demand.StdDev)
	d.Smoothed += pl.Demand.Smoothed
	b.CurrentCL += pl.CurrentCL
}

// nominalSum is the sum of s's levels' nominal limits: the seats
// upstream's borrowing divides among them on one replica.
func nominalSum(s Summary) int {
	n := 0
	for _, l := range s.Levels {
		n += l.Limits.NominalCL
	}
	return n
}
