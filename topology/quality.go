package topology

// Quality measures where a Service's traffic goes under a set of hints, in
// the model Auto mode is built on: each zone originates traffic in
// proportion to its share of allocatable CPU, and kube-proxy in that zone
// spreads it evenly over the endpoints it selects for the zone (hinted for
// the zone when every ready endpoint has a zone hint and one names the
// zone; otherwise all ready endpoints).
type Quality struct {
	// CrossZone is the expected fraction of traffic served in another zone
	// than it came from (an endpoint without a zone is always another).
	CrossZone float64
	// MaxOverload is the largest load of an endpoint relative to an even
	// share, minus 1: 0.25 means some endpoint gets 25% more than
	// total/endpoints.
	MaxOverload float64
	// Hinted reports whether kube-proxy uses hints in every zone.
	Hinted bool
}

// Evaluate computes the Quality of the ready endpoints of slices (read as
// kube-proxy reads them) under capacity c. It returns the zero Quality
// when c is insufficient or there is no ready endpoint.
// O(endpoints × hints + zones).
func Evaluate(c Capacity, slices []*Slice) Quality {
	if !c.ok {
		return Quality{}
	}
	z := len(c.zones)
	t := newZoneTable(c)
	var eps []*Endpoint
	allZone := true
	size := make([]int, z) // endpoints hinted per zone
	for _, s := range slices {
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if len(e.Addresses) == 0 || !proxyReady(e) {
				continue
			}
			eps = append(eps, e)
			if e.Hints == nil || len(e.Hints.ForZones) == 0 {
				allZone = false
				continue
			}
			for _, hz := range e.Hints.ForZones {
				if zi := t.lookup(hz); zi >= 0 {
					size[zi]++
				}
			}
		}
	}
	n := len(eps)
	if n == 0 {
		return Quality{}
	}
	// hinted[zi]: kube-proxy in zone zi uses its hinted endpoints.
	hinted := make([]bool, z)
	q := Quality{Hinted: allZone}
	for zi := range hinted {
		hinted[zi] = allZone && size[zi] > 0
		q.Hinted = q.Hinted && (hinted[zi] || c.ratio[zi] == 0)
	}
	// Traffic spread over all endpoints by zones that ignore hints.
	everywhere := 0.0
	for zi, r := range c.ratio {
		if !hinted[zi] {
			everywhere += r
		}
	}
	maxLoad := 0.0
	for _, e := range eps {
		load := everywhere / float64(n)
		own := t.lookup(e.Zone)
		for zi, r := range c.ratio {
			if !hinted[zi] {
				if zi != own {
					q.CrossZone += r / float64(n)
				}
				continue
			}
			if hasZone(e.Hints, c.zones[zi]) {
				load += r / float64(size[zi])
				if zi != own {
					q.CrossZone += r / float64(size[zi])
				}
			}
		}
		maxLoad = max(maxLoad, load)
	}
	q.MaxOverload = maxLoad*float64(n) - 1
	return q
}
