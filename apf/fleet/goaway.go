package fleet

// Overloaded reports whether the replica that published own is over its
// share of the fleet while another has seats idle: its seat demand per
// seat (over all levels, DemandAverage over CurrentCL) is above the
// fleet's, and some peer's demand is below its seats. It is when targeted
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

// load is a summary's seat demand and seats over its levels.
func load(s Summary) (demand, seats float64) {
	for _, l := range s.Levels {
		demand += l.Demand.Average
		seats += float64(l.CurrentCL)
	}
	return demand, seats
}
