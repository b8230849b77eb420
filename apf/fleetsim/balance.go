package fleetsim

// route returns the replica cl's next request goes to: the one its
// connection is on (opening one if it has none), or the balancer's pick.
func (s *sim) route(cl *client) int {
	if cl.sticky {
		if cl.conn < 0 {
			cl.conn = s.newConnection()
		}
		return cl.conn
	}
	if s.cfg.Balancer == BalancerLeastInflight {
		return s.leastInflight()
	}
	return s.turn()
}

// newConnection returns the replica the balancer opens a new connection
// on.
func (s *sim) newConnection() int {
	if s.cfg.Balancer == BalancerLeastInflight {
		return s.leastInflight()
	}
	return s.turn()
}

// turn returns the next replica in turn.
func (s *sim) turn() int {
	r := s.next % len(s.replicas)
	s.next++
	return r
}

// leastInflight returns the replica with the fewest requests in flight,
// the first from the next in turn among equals.
func (s *sim) leastInflight() int {
	first := s.turn()
	best := first
	for i := 1; i < len(s.replicas); i++ {
		r := (first + i) % len(s.replicas)
		if s.replicas[r].inflight < s.replicas[best].inflight {
			best = r
		}
	}
	return best
}

// targetedGoAway is GoAwayTargeted's periodic look: on every replica with
// more seat demand per seat than the fleet while another has idle seats,
// the connection that used the most seat-seconds there since the last
// look is closed, so that the client's next request reconnects through
// the balancer.
func (s *sim) targetedGoAway() {
	s.clock.AfterFunc(s.cfg.GoAway.Period, s.targetedGoAway)
	demand, limit := 0, 0
	for _, r := range s.replicas {
		demand += r.executing + r.waiting
		limit += r.limit
	}
	for _, r := range s.replicas {
		if r.limit == 0 || !s.idleElsewhere(r) || float64(r.executing+r.waiting)*float64(limit) <= float64(demand)*float64(r.limit) {
			continue
		}
		var heaviest *client
		for _, cl := range s.clients {
			if cl.sticky && cl.conn == r.index && cl.recent > 0 && (heaviest == nil || cl.recent > heaviest.recent) {
				heaviest = cl
			}
		}
		if heaviest != nil {
			heaviest.conn = -1
			s.stats.goaways++
		}
	}
	for _, cl := range s.clients {
		cl.recent = 0
	}
}

// idleElsewhere reports whether a replica other than r has seats of the
// level that nothing executes on.
func (s *sim) idleElsewhere(r *replica) bool {
	for _, o := range s.replicas {
		if o != r && o.executing < o.limit {
			return true
		}
	}
	return false
}
