package slicecache

import (
	"cmp"
	"slices"
)

// Change is what one Checkout applied to one Service.
type Change struct {
	Service ServiceName
	// Ports lists the service ports whose endpoints changed, by name and
	// protocol. It is empty when the Service's slices changed without
	// changing its endpoints (kube-proxy reports such a Service as
	// changed too).
	Ports []PortChange
}

// PortChange is what changed in the endpoints of one service port. Each
// list is sorted by address, then port.
type PortChange struct {
	Port PortName
	// Added are endpoints that were not there before.
	Added []Endpoint
	// Updated are the new versions of endpoints whose fields changed.
	Updated []Endpoint
	// Removed are the old versions of endpoints that are gone.
	Removed []Endpoint
}

// Checkout applies every change recorded since the last Checkout and
// returns, sorted by Service, the Services that had one (the Services
// kube-proxy's EndpointsMap.Update reports as updated) with what changed
// in their endpoints. A Service left with no slices is forgotten. Its
// cost is proportional to the endpoints of the slices that changed, not
// to the size of their Services. The Changes are the caller's.
func (c *Cache) Checkout() []Change {
	if len(c.pending) == 0 {
		return nil
	}
	slices.SortFunc(c.pending, func(a, b *service) int {
		return cmp.Or(cmp.Compare(a.name.Namespace, b.name.Namespace), cmp.Compare(a.name.Name, b.name.Name))
	})
	out := make([]Change, 0, len(c.pending))
	for _, svc := range c.pending {
		out = append(out, c.applyService(svc))
		svc.pending = false
	}
	clear(c.pending)
	c.pending = c.pending[:0]
	return out
}

// applyService applies the recorded slices of svc, then merges the
// endpoints they touched.
func (c *Cache) applyService(svc *service) Change {
	for _, name := range svc.changed {
		v := svc.slices[name]
		v.queued = false
		if v.applied != nil {
			c.removeCopies(svc, v.applied)
		}
		v.applied = nil
		if v.latestRemoved {
			delete(svc.slices, name)
			continue
		}
		v.applied = v.latest
		c.addCopies(svc, v.applied, v.seq)
	}
	clear(svc.changed)
	svc.changed = svc.changed[:0]

	ch := Change{Service: svc.name}
	for name, p := range svc.ports {
		if len(p.touched) > 0 {
			if pc, changed := c.mergePort(p); changed {
				pc.Port = name
				ch.Ports = append(ch.Ports, pc)
			}
		}
		if len(p.entries) == 0 {
			delete(svc.ports, name)
		}
	}
	slices.SortFunc(ch.Ports, func(a, b PortChange) int {
		return cmp.Or(cmp.Compare(a.Port.Name, b.Port.Name), cmp.Compare(a.Port.Protocol, b.Port.Protocol))
	})
	if len(svc.slices) == 0 && len(svc.ports) == 0 {
		delete(c.services, svc.name)
	}
	return ch
}

// mergePort chooses the winning copy of every touched endpoint of p and
// compares it with the one chosen at the last Checkout.
func (c *Cache) mergePort(p *port) (PortChange, bool) {
	var pc PortChange
	for _, key := range p.touched {
		en := p.entries[key]
		en.touched = false
		cp, ok := en.winner()
		switch {
		case !ok && en.has:
			pc.Removed = append(pc.Removed, en.win)
		case ok:
			addr := en.win.Address // the same key prints the same
			if !en.has {
				addr = key.addr.String()
			}
			e := endpoint(addr, key.port, cp, c.opts.NodeName)
			if !en.has {
				pc.Added = append(pc.Added, e)
			} else if !e.Equal(&en.win) {
				pc.Updated = append(pc.Updated, e)
			}
			en.win, en.has = e, true
		}
		if !ok {
			delete(p.entries, key)
		}
	}
	clear(p.touched)
	p.touched = p.touched[:0]
	changed := len(pc.Added)+len(pc.Updated)+len(pc.Removed) > 0
	if changed {
		slices.SortFunc(pc.Added, compareEndpoints)
		slices.SortFunc(pc.Updated, compareEndpoints)
		slices.SortFunc(pc.Removed, compareEndpoints)
		if p.sorted != nil {
			p.sorted = applySorted(p.sorted, &pc)
		}
	}
	return pc, changed
}

// applySorted returns a new sorted list: old with pc applied, in one
// merge pass. O(len(old) + changes).
func applySorted(old []Endpoint, pc *PortChange) []Endpoint {
	out := make([]Endpoint, 0, len(old)+len(pc.Added)-len(pc.Removed))
	add, rm, up := pc.Added, pc.Removed, pc.Updated
	for i := 0; i < len(old) || len(add) > 0; {
		if len(add) > 0 && (i == len(old) || compareEndpoints(add[0], old[i]) < 0) {
			out = append(out, add[0])
			add = add[1:]
			continue
		}
		o := &old[i]
		i++
		switch {
		case len(rm) > 0 && compareEndpoints(rm[0], *o) == 0:
			rm = rm[1:]
		case len(up) > 0 && compareEndpoints(up[0], *o) == 0:
			out = append(out, up[0])
			up = up[1:]
		default:
			out = append(out, *o)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Endpoints returns the merged endpoints of a service port as of the last
// Checkout, sorted by address, then port; nil when it has none. The list
// is shared: do not modify it; a later Checkout does not change it but
// makes a new one. The first call for a port sorts its endpoints
// (O(n log n)); from then on, each Checkout that changes the port merges
// its changes into a new list (O(n)), and Endpoints returns it in O(1).
func (c *Cache) Endpoints(svc ServiceName, name PortName) []Endpoint {
	s := c.services[svc]
	if s == nil {
		return nil
	}
	p := s.ports[name]
	if p == nil || len(p.entries) == 0 {
		return nil
	}
	if p.sorted == nil {
		list := make([]Endpoint, 0, len(p.entries))
		for _, en := range p.entries {
			if en.has {
				list = append(list, en.win)
			}
		}
		slices.SortFunc(list, compareEndpoints)
		p.sorted = list
	}
	return p.sorted
}

// Ports returns the service ports of svc that have endpoints as of the
// last Checkout, sorted by name, then protocol.
func (c *Cache) Ports(svc ServiceName) []PortName {
	s := c.services[svc]
	if s == nil {
		return nil
	}
	var out []PortName
	for name, p := range s.ports {
		for _, en := range p.entries {
			if en.has {
				out = append(out, name)
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b PortName) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Protocol, b.Protocol))
	})
	return out
}

// Services returns the Services that have endpoints as of the last
// Checkout, sorted. O(Services).
func (c *Cache) Services() []ServiceName {
	var out []ServiceName
	for name := range c.services {
		if len(c.Ports(name)) > 0 {
			out = append(out, name)
		}
	}
	slices.SortFunc(out, func(a, b ServiceName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}
