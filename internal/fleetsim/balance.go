package fleetsim

// route returns the replica cl's next request goes to: the one its
// connection is on (opening one if it has none), or the balancer's pick.
func (s *sim) route(cl *client) int {
	if cl.sticky {
		if cl.conn < 0 {
			cl.conn = s.newConnection()
			cl.conns++
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
