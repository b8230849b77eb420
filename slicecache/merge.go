package slicecache

import (
	"cmp"
	"slices"

	"github.com/fairslice/fairslice/slicer"
)

// port holds the merged endpoints of one service port.
type port struct {
	entries map[endpointKey]*entry
	// touched lists the keys whose copies changed since the last
	// Checkout, each once.
	touched []endpointKey
	// sorted is the list Endpoints returns, built on demand; nil after a
	// change.
	sorted []Endpoint
}

// endpointKey is an endpoint's identity in kube-proxy: its normalised
// first address and its port number.
type endpointKey struct {
	addr addrKey
	port int32
}

// entry is every copy of one endpoint in the applied slices, and the copy
// that won at the last Checkout.
type entry struct {
	copies  []endpointCopy
	win     Endpoint
	has     bool
	touched bool
}

// endpointCopy is one occurrence of an endpoint: in slice src, at port
// index portIdx and endpoint index epIdx. Copies are ordered by
// (seq, portIdx, epIdx), the order in which kube-proxy would meet them if
// it visited slices from the oldest to the most recent.
type endpointCopy struct {
	src            *Slice
	seq            uint64
	portIdx, epIdx int32
	terminating    bool
}

func (a *endpointCopy) before(b *endpointCopy) bool {
	return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.portIdx, b.portIdx), cmp.Compare(a.epIdx, b.epIdx)) < 0
}

// eachCopy calls f with every endpoint of s under every port kube-proxy
// reads (one with a number), with its key.
func (c *Cache) eachCopy(s *Slice, f func(name PortName, pi, ei int, key endpointKey)) {
	for pi := range s.Ports {
		sp := &s.Ports[pi]
		if sp.Port == 0 {
			continue
		}
		name := PortName{sp.Name, sp.Protocol}
		for ei := range s.Endpoints {
			if key, ok := c.key(&s.Endpoints[ei], sp.Port); ok {
				f(name, pi, ei, key)
			}
		}
	}
}

// addCopies files every endpoint of s under its service ports. O(ports ×
// endpoints of s).
func (c *Cache) addCopies(svc *service, s *Slice, seq uint64) {
	c.eachCopy(s, func(name PortName, pi, ei int, key endpointKey) {
		p := svc.ports[name]
		if p == nil {
			p = &port{entries: map[endpointKey]*entry{}}
			svc.ports[name] = p
		}
		en := p.entries[key]
		if en == nil {
			en = &entry{}
			p.entries[key] = en
		}
		en.copies = append(en.copies, endpointCopy{src: s, seq: seq, portIdx: int32(pi), epIdx: int32(ei),
			terminating: s.Endpoints[ei].Conditions.Terminating == slicer.True})
		p.touch(key, en)
	})
}

// removeCopies takes every copy that came from s out of its entries.
func (c *Cache) removeCopies(svc *service, s *Slice) {
	c.eachCopy(s, func(name PortName, _, _ int, key endpointKey) {
		if p := svc.ports[name]; p != nil {
			if en := p.entries[key]; en != nil {
				en.copies = slices.DeleteFunc(en.copies, func(cp endpointCopy) bool { return cp.src == s })
				p.touch(key, en)
			}
		}
	})
}

func (c *Cache) key(e *slicer.Endpoint, port int32) (endpointKey, bool) {
	if len(e.Addresses) == 0 {
		return endpointKey{}, false
	}
	addr, ok := parseAddress(c.opts.AddressType, e.Addresses[0])
	return endpointKey{addr, port}, ok
}

func (p *port) touch(key endpointKey, en *entry) {
	if !en.touched {
		en.touched = true
		p.touched = append(p.touched, key)
	}
}

// winner returns the copy kube-proxy keeps: the last non-terminating copy
// or, when every copy is terminating, the first copy of the most recent
// slice. ok is false when there are no copies.
func (en *entry) winner() (best *endpointCopy, ok bool) {
	for i := range en.copies {
		cp := &en.copies[i]
		switch {
		case best == nil:
			best = cp
		case !cp.terminating && (best.terminating || best.before(cp)):
			best = cp
		case cp.terminating && best.terminating && (cp.seq > best.seq || (cp.seq == best.seq && cp.before(best))):
			best = cp
		}
	}
	return best, best != nil
}

// endpoint builds the merged endpoint of copy cp in a cache for nodeName;
// addr is the key's address as a string.
func endpoint(addr string, port int32, cp *endpointCopy, nodeName string) Endpoint {
	e := &cp.src.Endpoints[cp.epIdx]
	return Endpoint{
		Address:     addr,
		Port:        port,
		Ready:       e.Conditions.Ready != slicer.False,
		Serving:     e.Conditions.Serving != slicer.False,
		Terminating: e.Conditions.Terminating == slicer.True,
		Local:       nodeName != "" && e.NodeName == nodeName,
		NodeName:    e.NodeName,
		Zone:        e.Zone,
		Hostname:    e.Hostname,
		TargetRef:   targetRef(&e.TargetRef),
		Hints:       e.Hints,
	}
}

func targetRef(r *slicer.ObjectRef) *slicer.ObjectRef {
	if r.IsZero() {
		return nil
	}
	return r
}

// compareEndpoints orders endpoints by address, then port.
func compareEndpoints(a, b Endpoint) int {
	return cmp.Or(cmp.Compare(a.Address, b.Address), cmp.Compare(a.Port, b.Port))
}
