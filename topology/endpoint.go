package topology

import "github.com/fairslice/fairslice/slicer"

// The endpoint and slice types are the slicer's, so that hints are set
// directly on a reconcile plan.
type (
	// Endpoint is an endpoint of an EndpointSlice (slicer.Endpoint). The
	// controller reads an unset Ready as not ready; kube-proxy reads it as
	// ready (see SelectEndpoints).
	Endpoint = slicer.Endpoint
	// Hints are an endpoint's topology hints (slicer.Hints).
	//
	// Hints values are shared: the functions of this package point every
	// endpoint hinted for the same zone at one *Hints. Treat a Hints value
	// and its slices as immutable; replace the pointer to change an
	// endpoint's hints.
	Hints = slicer.Hints
	// Slice is an EndpointSlice (slicer.Slice).
	Slice = slicer.Slice
	// Condition is an endpoint condition (slicer.Tristate).
	Condition = slicer.Tristate
)

// Condition values.
const (
	Unset = slicer.Unset
	True  = slicer.True
	False = slicer.False
)

// orDefault reads c as a bool, Unset as def.
func orDefault(c Condition, def bool) bool {
	if c == Unset {
		return def
	}
	return c == True
}

// hasZone reports whether h names zone among its zones.
func hasZone(h *Hints, zone string) bool {
	if h == nil {
		return false
	}
	for _, z := range h.ForZones {
		if z == zone {
			return true
		}
	}
	return false
}

func hasNode(h *Hints, node string) bool {
	if h == nil {
		return false
	}
	for _, n := range h.ForNodes {
		if n == node {
			return true
		}
	}
	return false
}

// isReady reports readiness as the EndpointSlice controller reads it: an
// unset Ready condition is not ready.
func isReady(e *Endpoint) bool { return e.Conditions.Ready == True }

// address returns the endpoint's first address, or "".
func address(e *Endpoint) string {
	if len(e.Addresses) == 0 {
		return ""
	}
	return e.Addresses[0]
}

// cloneSlice copies s with its own endpoint list (one allocation); labels,
// ports, addresses and hints stay shared, as all are treated as read-only.
func cloneSlice(s *Slice) *Slice {
	c := *s
	c.Endpoints = make([]Endpoint, len(s.Endpoints))
	copy(c.Endpoints, s.Endpoints)
	return &c
}

// SliceInfo is the reconciler's plan for one Service and address type as
// the hint functions see it (upstream's topologycache.SliceInfo): the
// slices about to be created and updated, whose hints may be set in place,
// and the existing slices left unchanged so far, which are never modified:
// a function that must change one moves a copy of it to ToUpdate,
// appended in Unchanged order, and drops it from Unchanged.
type SliceInfo struct {
	// AddressType ("IPv4", "IPv6" or "FQDN") only appears in event messages.
	AddressType string
	ToCreate    []*Slice
	ToUpdate    []*Slice
	Unchanged   []*Slice
}

// readyEndpoints counts the ready endpoints of every slice of si.
func (si *SliceInfo) readyEndpoints() int {
	n := 0
	for _, list := range [...][]*Slice{si.ToCreate, si.ToUpdate, si.Unchanged} {
		for _, s := range list {
			for i := range s.Endpoints {
				if isReady(&s.Endpoints[i]) {
					n++
				}
			}
		}
	}
	return n
}
