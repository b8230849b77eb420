package adapter

// Endpoints → groups: the endpoints of the converted pods, one group per
// address type and port set, in the pods' order.

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/fairslice/fairslice/kube/internal/podload"
	"github.com/fairslice/fairslice/slicer"
)

// first converts the pods on a Converter's first call (since
// forgetting). With T address types, the endpoints of pods[k] are
// block[k*T:(k+1)*T] of one block. When every pod has one endpoint of the
// Service's only address type, one port set and no problem (the common
// case), the block is the group as it stands, without a copy, and the
// memory of each pod, which the block says in full, is only written out
// (lazy) if a second call comes. Otherwise memo[k] is pods[k]'s.
func (c *Converter) first(svc *corev1.Service, pods []*corev1.Pod, types []slicer.AddressType, nodes NodeGetter) error {
	n, t := len(pods), len(types)
	c.memo = c.memo[:0]
	c.seen = slices.Grow(c.seen[:0], n)[:n]
	for i := range c.seen {
		c.seen[i] = mark{gen: c.podGen}
	}
	block := make([]slicer.Endpoint, n*t)
	flat := t == 1
	var flatPorts []slicer.Port
	var touched uintptr
	for k, pod := range pods {
		if k%podload.Batch == 0 {
			touched += podload.Ahead(pods, k)
		}
		c.epArena = block[:k*t] // convert takes the next t endpoints
		var m podMemo
		if err := c.convert(&m, svc, pod, types, nodes, true, n-k); err != nil {
			c.memo, c.seen = c.memo[:0], c.seen[:0] // nothing is remembered from a failed first call
			return err
		}
		if flat {
			if k == 0 {
				flatPorts = m.ports
			}
			if !m.skip && m.errs == nil && len(m.eps) == 1 && m.eps[0].Addresses != nil && samePorts(m.ports, flatPorts) {
				continue
			}
			flat = false
			c.memo = slices.Grow(c.memo, n)
			c.memo = append(c.memo, flatMemo(block[:k], flatPorts)...)
		}
		c.memo = append(c.memo, m)
	}
	c.epArena = block
	c.touched += touched
	if !flat {
		c.group(pods, types, true)
		return nil
	}
	if n > 0 {
		c.lazy, c.lazyPorts = block[:n:n], flatPorts
		c.ports = append(c.ports[:0], flatPorts...)
		c.groups = append(c.groups, slicer.Group{AddressType: types[0], Ports: c.intern(c.ports), Endpoints: block[:n:n]})
	}
	// The block is the memory of the pods: the next call must not reuse
	// it for its groups.
	c.eps = c.eps[:0]
	return nil
}

// flatMemo returns the memory of pods whose endpoints are eps, one each,
// all with ports.
func flatMemo(eps []slicer.Endpoint, ports []slicer.Port) []podMemo {
	out := make([]podMemo, len(eps))
	for k := range eps {
		out[k] = podMemo{ports: ports, eps: eps[k : k+1 : k+1]}
	}
	return out
}

// group fills c.groups from the memory of pods, in their order, and
// keeps the groups' arrays for reuse by the next call.
// On a first call memo[k] is pods[k]'s; later the index tells.
func (c *Converter) group(pods []*corev1.Pod, types []slicer.AddressType, fresh bool) {
	var lastPorts []slicer.Port
	first := -1
	for k, pod := range pods {
		i := int32(k)
		if !fresh {
			i, _ = c.pods.get(pod) // every pod is in it by now
		}
		m := &c.memo[i]
		if m.skip {
			continue
		}
		if first < 0 || !samePorts(m.ports, lastPorts) {
			c.ports = append(c.ports[:0], m.ports...)
			first = c.groupFor(types[0], len(pods))
			for _, t := range types[1:] {
				c.groupFor(t, len(pods))
			}
			lastPorts = m.ports
		}
		for ti := range m.eps { // none for a pod whose node is missing
			if m.eps[ti].Addresses != nil {
				g := &c.groups[first+ti]
				g.Endpoints = append(g.Endpoints, m.eps[ti])
			}
		}
	}
	for i := range c.groups {
		if i < len(c.eps) {
			c.eps[i] = c.groups[i].Endpoints
		} else {
			c.eps = append(c.eps, c.groups[i].Endpoints)
		}
	}
}

// groupFor returns the index of the group of type t with the current
// pod's ports, adding it if needed. The groups of one port set are
// consecutive, in the order of the Service's address types.
func (c *Converter) groupFor(t slicer.AddressType, n int) int {
	for i := range c.groups {
		if c.groups[i].AddressType == t && slices.Equal(c.groups[i].Ports, c.ports) {
			return i
		}
	}
	i := len(c.groups)
	var eps []slicer.Endpoint
	if i < len(c.eps) {
		eps = c.eps[i][:0]
	}
	if cap(eps) < n && i == 0 {
		eps = make([]slicer.Endpoint, 0, n) // most pods share the first port set
	}
	c.groups = append(c.groups, slicer.Group{AddressType: t, Ports: c.intern(c.ports), Endpoints: eps})
	return i
}
