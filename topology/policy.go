package topology

// Service annotations that request Auto hints.
const (
	AnnotationTopologyMode = "service.kubernetes.io/topology-mode"
	// AnnotationTopologyAwareHints is the deprecated key; when present it
	// decides, even if AnnotationTopologyMode is also set.
	AnnotationTopologyAwareHints = "service.kubernetes.io/topology-aware-hints"
)

// spec.trafficDistribution values.
const (
	PreferClose    = "PreferClose"
	PreferSameZone = "PreferSameZone"
	PreferSameNode = "PreferSameNode"
)

// Policy is how the EndpointSlice controller sets a Service's hints.
type Policy uint8

const (
	// PolicyNone removes every hint.
	PolicyNone Policy = iota
	// PolicyAuto places Auto hints (AddHints).
	PolicyAuto
	// PolicyPreferClose hints every ready endpoint for its own zone
	// (trafficDistribution PreferClose or PreferSameZone).
	PolicyPreferClose
	// PolicyPreferSameNode hints every ready endpoint for its own zone and
	// its own node.
	PolicyPreferSameNode
)

var policyNames = [...]string{"None", "Auto", "PreferClose", "PreferSameNode"}

func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return "Policy(?)"
}

// AutoRequested reports whether a Service's annotations ask for Auto hints:
// the deprecated AnnotationTopologyAwareHints decides when present, else
// AnnotationTopologyMode; only "Auto" and "auto" count.
func AutoRequested(annotations map[string]string) bool {
	v, ok := annotations[AnnotationTopologyAwareHints]
	if !ok {
		v = annotations[AnnotationTopologyMode]
	}
	return v == "Auto" || v == "auto"
}

// PolicyFor returns the policy of a Service with these annotations and
// spec.trafficDistribution ("" when unset), as the reconciler of
// k8s.io/endpointslice v0.37.2 decides it: the Auto annotation wins over
// the field; PreferClose is always valid; PreferSameZone and PreferSameNode
// only with preferSame (feature gate PreferSameTrafficDistribution, on and
// locked since Kubernetes 1.35); anything else means no hints.
func PolicyFor(annotations map[string]string, trafficDistribution string, preferSame bool) Policy {
	if AutoRequested(annotations) {
		return PolicyAuto
	}
	switch trafficDistribution {
	case PreferClose:
		return PolicyPreferClose
	case PreferSameZone:
		if preferSame {
			return PolicyPreferClose
		}
	case PreferSameNode:
		if preferSame {
			return PolicyPreferSameNode
		}
	}
	return PolicyNone
}

// Apply runs the reconciler's topology step for one address type of a
// Service: Auto hints (AddHints), trafficDistribution hints
// (ReconcileTrafficDistribution), or hint removal (RemoveHints). With
// opts.HadHints and a policy other than Auto it reports upstream's
// TopologyAwareHintsDisabled event. The Result's Fallback is NotRequested
// (or HintsDisabled after Auto hints) under PolicyNone.
func Apply(c Capacity, si *SliceInfo, p Policy, opts Options) Result {
	if p == PolicyAuto {
		return AddHints(c, si, opts)
	}
	var r Result
	if opts.HadHints {
		r.Events = []Event{{Type: "Warning", Reason: "TopologyAwareHintsDisabled",
			Message: WithAddressType(MsgTopologyAwareHintsDisabled, si.AddressType)}}
	}
	if p == PolicyNone {
		RemoveHints(si)
		r.Fallback = Fallback{Reason: NotRequested}
		if opts.HadHints {
			r.Fallback.Reason = HintsDisabled
		}
		r.HintsByZone = map[string]int{}
		return r
	}
	ReconcileTrafficDistribution(si, p)
	r.HintsByZone = hintsByZone(si)
	return r
}

// hintsByZone counts zone hints of ready endpoints over every slice of si.
func hintsByZone(si *SliceInfo) map[string]int {
	m := map[string]int{}
	for _, list := range [...][]*Slice{si.ToCreate, si.ToUpdate, si.Unchanged} {
		for _, s := range list {
			for i := range s.Endpoints {
				e := &s.Endpoints[i]
				if isReady(e) && e.Hints != nil {
					for _, z := range e.Hints.ForZones {
						m[z]++
					}
				}
			}
		}
	}
	return m
}

// ReconcileTrafficDistribution sets the hints of spec.trafficDistribution,
// as upstream's trafficdist.ReconcileHints: under PolicyPreferClose every
// ready endpoint is hinted for its own zone, under PolicyPreferSameNode also
// for its own node, and under any other policy hints are removed. Not-ready
// endpoints keep whatever hints they have. An unchanged slice moves (as a
// copy) to si.ToUpdate when one of its ready endpoints' hints differ from
// what the policy wants. There is no balancing between zones. O(endpoints).
func ReconcileTrafficDistribution(si *SliceInfo, p Policy) {
	if p != PolicyPreferClose && p != PolicyPreferSameNode {
		RemoveHints(si)
		return
	}
	nodes := p == PolicyPreferSameNode
	j := 0
	for _, s := range si.Unchanged {
		if !needsCloseUpdate(s, nodes) {
			si.Unchanged[j] = s
			j++
			continue
		}
		si.ToUpdate = append(si.ToUpdate, cloneSlice(s))
	}
	si.Unchanged = si.Unchanged[:j]
	cache := map[[2]string]*Hints{}
	for _, list := range [...][]*Slice{si.ToCreate, si.ToUpdate} {
		for _, s := range list {
			for i := range s.Endpoints {
				e := &s.Endpoints[i]
				if !isReady(e) {
					continue
				}
				key := [2]string{e.Zone, ""}
				if nodes {
					key[1] = e.NodeName
				}
				if key == [2]string{} {
					e.Hints = nil
					continue
				}
				h := cache[key]
				if h == nil {
					h = &Hints{}
					if key[0] != "" {
						h.ForZones = []string{key[0]}
					}
					if key[1] != "" {
						h.ForNodes = []string{key[1]}
					}
					cache[key] = h
				}
				e.Hints = h
			}
		}
	}
}

// needsCloseUpdate is upstream's preferCloseHeuristic.needsUpdate.
func needsCloseUpdate(s *Slice, nodes bool) bool {
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		if !isReady(e) {
			continue
		}
		h := e.Hints
		if e.Zone != "" {
			if h == nil || len(h.ForZones) != 1 || h.ForZones[0] != e.Zone {
				return true
			}
		} else if h != nil && len(h.ForZones) > 0 {
			return true
		}
		if e.NodeName != "" && nodes {
			if h == nil || len(h.ForNodes) != 1 || h.ForNodes[0] != e.NodeName {
				return true
			}
		} else if h != nil && len(h.ForNodes) > 0 {
			return true
		}
	}
	return false
}
