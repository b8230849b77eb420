package topology

import "math"

// OverloadThreshold is upstream's overload threshold: Auto mode keeps every
// zone's endpoints within 20% above their fair share of load.
const OverloadThreshold float64 = 0.2

// Allocation is the number of hinted endpoints a zone should get, for N
// ready endpoints in all (upstream's allocation).
type Allocation struct {
	Zone string
	// Desired is the target: the zone's CPU share of N, raised to Minimum
	// when that is larger.
	Desired float64
	// Minimum is the fewest endpoints that keep the zone's endpoints within
	// the overload threshold: ceil(share × N × (1/(1+0.2))), computed in
	// float64 exactly as upstream does.
	Minimum int
	// Maximum is Minimum plus the endpoints left over after every zone's
	// minimum.
	Maximum int
}

// Allocate returns the allocation of n ready endpoints over c's zones, in
// zone order, or the reason Auto hints are off, checked in upstream's
// order: insufficient node information, one zone, fewer endpoints than
// zones, minimums that do not fit. O(zones).
func (c Capacity) Allocate(n int) ([]Allocation, Fallback) {
	a := make([]Allocation, len(c.zones))
	fb := c.allocateInto(a, n)
	if fb.Reason != NoReason {
		return nil, fb
	}
	return a, fb
}

// allocateInto is Allocate writing into a, which has one entry per zone.
func (c Capacity) allocateInto(a []Allocation, n int) Fallback {
	if !c.ok {
		return Fallback{Reason: InsufficientNodeInfo}
	}
	z := len(c.zones)
	if z < 2 {
		return Fallback{Reason: NodesReadyInOneZoneOnly}
	}
	if z > n {
		return Fallback{Reason: InsufficientNumberOfEndpoints, Endpoints: n, Zones: z}
	}
	sum := 0
	for i, ratio := range c.ratio {
		desired := ratio * float64(n)
		minimum := overloadMinimum(desired)
		a[i] = Allocation{Zone: c.zones[i], Desired: math.Max(desired, float64(minimum)), Minimum: minimum}
		sum += minimum
	}
	if sum > n {
		return Fallback{Reason: MinAllocationExceedsOverloadThreshold, Endpoints: n, Zones: z}
	}
	for i := range a {
		a[i].Maximum = a[i].Minimum + n - sum
	}
	return Fallback{}
}

// Overloaded reports whether a Service whose Auto hints are spread as
// hintsByZone (the Result.HintsByZone of its last AddHints) would overload
// some zone under capacity c: upstream's TopologyCache.GetOverloadedServices
// test, which the EndpointSlice controller runs after every node change to
// requeue the Services whose hints must be recomputed. Call it with the new
// Capacity for each Service that has hints, and resync those for which it
// is true.
//
// It is false when hintsByZone is empty (no hints, nothing to overload);
// otherwise true when c cannot support hints at all (insufficient node
// information or fewer than two zones), when a zone of c has no hinted
// endpoints, or when a zone has fewer than ceil(T × share / 1.2), T being
// the sum of hintsByZone, in upstream's float64 expression. Hints for zones
// c does not have count in T only. O(zones).
func (c Capacity) Overloaded(hintsByZone map[string]int) bool {
	if len(hintsByZone) == 0 {
		return false
	}
	if !c.ok || len(c.zones) < 2 {
		return true
	}
	total := 0
	for _, n := range hintsByZone {
		total += n
	}
	for i, ratio := range c.ratio {
		have, ok := hintsByZone[c.zones[i]]
		if !ok {
			return true
		}
		if have < overloadMinimum(float64(total)*ratio) {
			return true
		}
	}
	return false
}
