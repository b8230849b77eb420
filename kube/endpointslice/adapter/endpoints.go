package adapter

import (
	discovery "k8s.io/api/discovery/v1"

	"github.com/fairslice/fairslice/slicer"
)

// EndpointFromAPI converts a discovery/v1 endpoint to the slicer's (and
// topology's) endpoint, as the controller reads its existing slices.
func EndpointFromAPI(e *discovery.Endpoint) slicer.Endpoint {
	var out slicer.Endpoint
	fillEndpoint(&out, e)
	return out
}

// SliceFromAPI converts an EndpointSlice's name, generateName, namespace,
// address type and endpoints: what topology reads of a slice.
func SliceFromAPI(s *discovery.EndpointSlice) *slicer.Slice {
	out := &slicer.Slice{Name: s.Name, GenerateName: s.GenerateName, Namespace: s.Namespace,
		AddressType: slicer.AddressType(s.AddressType), Endpoints: make([]slicer.Endpoint, len(s.Endpoints))}
	for i := range s.Endpoints {
		fillEndpoint(&out.Endpoints[i], &s.Endpoints[i])
	}
	return out
}

// hintsToAPI converts slicer hints to discovery/v1 hints; nil stays nil.
func hintsToAPI(h *slicer.Hints) *discovery.EndpointHints {
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
