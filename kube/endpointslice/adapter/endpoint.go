package adapter

// discovery/v1 Endpoint → slicer.Endpoint, and the pointer fields of
// API objects read as values.

import (
	discovery "k8s.io/api/discovery/v1"

	"github.com/fairslice/fairslice/slicer"
)

// fillEndpoint converts e into out, which is zero, field by field (see
// fillPod on why not as one struct); fields that would be zero are not
// written.
func fillEndpoint(out *slicer.Endpoint, e *discovery.Endpoint) {
	out.Addresses = e.Addresses
	if e.Hostname != nil && *e.Hostname != "" {
		out.Hostname = *e.Hostname
	}
	if e.NodeName != nil && *e.NodeName != "" {
		out.NodeName = *e.NodeName
	}
	if e.Zone != nil && *e.Zone != "" {
		out.Zone = *e.Zone
	}
	out.Conditions = slicer.Conditions{
		Ready: tristate(e.Conditions.Ready), Serving: tristate(e.Conditions.Serving), Terminating: tristate(e.Conditions.Terminating),
	}
	if r := e.TargetRef; r != nil {
		t := &out.TargetRef
		setString(&t.Kind, r.Kind)
		setString(&t.Namespace, r.Namespace)
		setString(&t.Name, r.Name)
		setString(&t.UID, string(r.UID))
		setString(&t.APIVersion, r.APIVersion)
		setString(&t.ResourceVersion, r.ResourceVersion)
		setString(&t.FieldPath, r.FieldPath)
	}
	if h := e.Hints; h != nil {
		out.Hints = &slicer.Hints{}
		for _, z := range h.ForZones {
			out.Hints.ForZones = append(out.Hints.ForZones, z.Name)
		}
		for _, n := range h.ForNodes {
			out.Hints.ForNodes = append(out.Hints.ForNodes, n.Name)
		}
	}
}

// setString sets *dst, which is "", to s unless s is empty too (a store
// of a pointer costs a write barrier while the collector marks).
func setString(dst *string, s string) {
	if s != "" {
		*dst = s
	}
}

func tristate(b *bool) slicer.Tristate {
	if b == nil {
		return slicer.Unset
	}
	return slicer.TristateOf(*b)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

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
