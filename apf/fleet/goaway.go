package fleet

// Overloaded reports whether the replica that published own is over its
// share of the fleet while another has seats idle: its seat demand per
// seat (over all levels, DemandAverage or, if more, its flows' Demand,
// over CurrentCL) is above the fleet's, and some peer's demand is below
// its seats. It is when targeted
// GOAWAY (apf.TargetedGoAway) moves a heavy client away. With no peers it
// is false.
func Overloaded(own Summary, peers []Summary) bool {
	demand, seats := load(own)
	if seats == 0 {
		return false
	}
	fleetDemand, fleetSeats := demand, seats
	idle := false
	for _, p := range peers {
		d, s := load(p)
		fleetDemand, fleetSeats = fleetDemand+d, fleetSeats+s
		idle = idle || d < s
	}
	return idle && demand*fleetSeats > fleetDemand*seats
}

// MoveHelps reports whether moving flow f off the replica that published
// own can raise what the fleet serves: the other flows of f's priority
// level here ask for at least the level's seats here (so the level stays
// full without f; else the move only swaps which replica idles), and some
// peer has at least the seats f holds here idle, over all its levels
// (else f gets no more there; borrowing gives idle seats to the level
// that asks). It is when a targeted GOAWAY is worth its reconnect.
func MoveHelps(own Summary, f FlowDemand, peers []Summary) bool {
	others := 0.0
	for _, g := range own.Flows {
		if g.Level == f.Level && g.Flow != f.Flow {
			others += g.Demand
		}
	}
	if others < float64(levelCL(own, f.Level)) {
		return false
	}
	for _, p := range peers {
		if d, s := load(p); s-d >= f.Seats {
			return true
		}
	}
	return false
}

// load is a summary's seat demand and seats over its levels. The demand
// is the levels' seat demand or, if more, its flows' demand: the level's
// statistics miss the requests a cap refused at arrival, which the flows'
// demand counts.
func load(s Summary) (demand, seats float64) {
	flows := 0.0
	for _, l := range s.Levels {
		demand += l.Demand.Average
		seats += float64(l.CurrentCL)
	}
	for _, f := range s.Flows {
		flows += f.Demand
	}
	return max(demand, flows), seats
}
