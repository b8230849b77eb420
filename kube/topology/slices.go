package topology

import (
	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
	discovery "k8s.io/api/discovery/v1"
)

func tristate(b *bool) slicer.Tristate {
	if b == nil {
		return slicer.Unset
	}
	return slicer.Of(*b)
}

func boolPtr(t slicer.Tristate) *bool {
	switch t {
	case slicer.True:
		v := true
		return &v
	case slicer.False:
		v := false
		return &v
	}
	return nil
}

// EndpointFromAPI converts an EndpointSlice endpoint to the core's
// endpoint (addresses, zone, node name, conditions and hints; the rest plays
// no part in topology).
func EndpointFromAPI(e *discovery.Endpoint) topology.Endpoint {
	out := topology.Endpoint{
		Addresses: e.Addresses,
		Conditions: slicer.Conditions{
			Ready:       tristate(e.Conditions.Ready),
			Serving:     tristate(e.Conditions.Serving),
			Terminating: tristate(e.Conditions.Terminating),
		},
	}
	if e.Zone != nil {
		out.Zone = *e.Zone
	}
	if e.NodeName != nil {
		out.NodeName = *e.NodeName
	}
	if e.Hints != nil {
		h := &topology.Hints{}
		for _, z := range e.Hints.ForZones {
			h.ForZones = append(h.ForZones, z.Name)
		}
		for _, n := range e.Hints.ForNodes {
			h.ForNodes = append(h.ForNodes, n.Name)
		}
		out.Hints = h
	}
	return out
}

// SliceFromAPI converts an EndpointSlice's name, address type and endpoints.
func SliceFromAPI(s *discovery.EndpointSlice) *topology.Slice {
	out := &topology.Slice{Name: s.Name, GenerateName: s.GenerateName, Namespace: s.Namespace,
		AddressType: slicer.AddressType(s.AddressType), Endpoints: make([]topology.Endpoint, len(s.Endpoints))}
	for i := range s.Endpoints {
		out.Endpoints[i] = EndpointFromAPI(&s.Endpoints[i])
	}
	return out
}

// HintsToAPI converts the core's hints back to discovery/v1 hints.
func HintsToAPI(h *topology.Hints) *discovery.EndpointHints {
	if h == nil {
		return nil
	}
	out := &discovery.EndpointHints{}
	for _, z := range h.ForZones {
		out.ForZones = append(out.ForZones, discovery.ForZone{Name: z})
	}
	for _, n := range h.ForNodes {
		out.ForNodes = append(out.ForNodes, discovery.ForNode{Name: n})
	}
	return out
}

// EndpointToAPI converts a core endpoint to a discovery/v1 endpoint
// (addresses, zone, node name, conditions and hints).
func EndpointToAPI(e *topology.Endpoint) discovery.Endpoint {
	out := discovery.Endpoint{
		Addresses: e.Addresses,
		Conditions: discovery.EndpointConditions{
			Ready:       boolPtr(e.Conditions.Ready),
			Serving:     boolPtr(e.Conditions.Serving),
			Terminating: boolPtr(e.Conditions.Terminating),
		},
		Hints: HintsToAPI(e.Hints),
	}
	if e.Zone != "" {
		z := e.Zone
		out.Zone = &z
	}
	if e.NodeName != "" {
		n := e.NodeName
		out.NodeName = &n
	}
	return out
}
