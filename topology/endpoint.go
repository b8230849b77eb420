package topology

// Condition is an endpoint condition as the EndpointSlice API carries it: a
// *bool that may be unset. The reconciler side and kube-proxy read an unset
// condition differently, so the three states are kept apart.
type Condition int8

const (
	// Unset is a nil condition.
	Unset Condition = iota
	// True is a condition set to true.
	True
	// False is a condition set to false.
	False
)

// Bool returns c as a bool, reading Unset as def.
func (c Condition) Bool(def bool) bool {
	if c == Unset {
		return def
	}
	return c == True
}

// Cond converts a bool to a set Condition.
func Cond(b bool) Condition {
	if b {
		return True
	}
	return False
}

// Hints are an endpoint's topology hints (discovery/v1 EndpointHints): the
// zones and nodes it should serve.
//
// Hints values are shared: the functions of this package point every
// endpoint hinted for the same zone at one *Hints. Treat a Hints value and
// its slices as immutable; replace the pointer to change an endpoint's hints.
type Hints struct {
	ForZones []string
	ForNodes []string
}

// zoneHint reports whether h names zone among its zones.
func (h *Hints) hasZone(zone string) bool {
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

func (h *Hints) hasNode(node string) bool {
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

// Endpoint is one endpoint of an EndpointSlice, reduced to what topology
// decisions read. Zone and NodeName are "" when unset.
type Endpoint struct {
	// Addresses identify the endpoint; only the first is shown in
	// explanations.
	Addresses []string
	Zone      string
	NodeName  string
	Ready     Condition
	Serving   Condition
	// Terminating is read as false when Unset, by every reader.
	Terminating Condition
	// Hints is nil when the endpoint has none.
	Hints *Hints
}

// ready reports readiness as the EndpointSlice controller reads it: an
// unset Ready condition is not ready.
func (e *Endpoint) ready() bool { return e.Ready == True }

// Address returns the endpoint's first address, or "" when it has none.
func (e *Endpoint) Address() string {
	if len(e.Addresses) == 0 {
		return ""
	}
	return e.Addresses[0]
}

// Slice is an EndpointSlice as topology sees it: a name (for reports) and
// its endpoints. Functions that change hints of a slice they were given as
// unchanged never modify it: they copy it first (see SliceInfo).
type Slice struct {
	Name      string
	Endpoints []Endpoint
}

// clone copies s and its endpoint list (one allocation for the list);
// addresses and hints are shared, as both are treated as immutable.
func (s *Slice) clone() *Slice {
	c := &Slice{Name: s.Name, Endpoints: make([]Endpoint, len(s.Endpoints))}
	copy(c.Endpoints, s.Endpoints)
	return c
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
				if s.Endpoints[i].ready() {
					n++
				}
			}
		}
	}
	return n
}
