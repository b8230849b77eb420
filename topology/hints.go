package topology

// Allocator chooses how Auto hints are placed.
type Allocator uint8

const (
	// AllocatorUpstream places hints exactly as upstream's
	// topologycache.AddHints does (the default).
	AllocatorUpstream Allocator = iota
	// AllocatorMinCrossZone keeps as much traffic in its zone as the
	// overload threshold allows; see MinCrossZone in doc.go.
	AllocatorMinCrossZone
)

// Options tune AddHints. The zero value is upstream's behaviour.
type Options struct {
	// HadHints is whether the Service held Auto hints before this sync
	// (upstream keeps this in its TopologyCache). It decides whether the
	// TopologyAwareHintsEnabled event is emitted, and enables Hysteresis.
	HadHints bool
	// Allocator selects the placement; AllocatorUpstream by default.
	Allocator Allocator
	// Hysteresis, with AllocatorMinCrossZone, is an extra overload margin
	// tolerated while the Service already has hints (HadHints): hints are
	// turned off only when no placement keeps every zone within
	// OverloadThreshold+Hysteresis, and existing hints within that bound
	// are kept as they are. 0 disables it; the KEP-2433 design used 0.1
	// (enable at 20% overload, disable at 30%). Values outside (0, 10],
	// and NaN, count as 0.
	Hysteresis float64
}

// Result is the outcome of AddHints for one Service and address type.
type Result struct {
	// Fallback says why hints are off; its Reason is NoReason when they are
	// on.
	Fallback Fallback
	// HintsByZone counts hints per zone over every ready endpoint of the
	// final slices (an endpoint hinted for two zones counts for both), as
	// upstream records it in its TopologyCache; zones with none are left
	// out. Empty when hints are off.
	HintsByZone map[string]int
	// Events are the events upstream would record.
	Events []Event
}

// Enabled reports whether hints are on.
func (r Result) Enabled() bool { return r.Fallback.Reason == NoReason }

// AddHints sets Auto (topology-mode: Auto) hints on the plan si for the
// zones of c: it sets hints in place on si.ToCreate and si.ToUpdate, moves
// copies of unchanged slices whose hints must change to si.ToUpdate, and
// returns whether hints are on and why not. When they are off, every hint
// is removed as RemoveHints does.
//
// With the default Options the result is upstream's, slice for slice,
// except that upstream breaks ties in Go map order where AddHints takes the
// first zone in sorted order; see doc.go. O(endpoints + zones²).
func AddHints(c Capacity, si *SliceInfo, opts Options) Result {
	if opts.Allocator == AllocatorMinCrossZone {
		return addHintsMinCross(c, si, opts)
	}
	return addHintsUpstream(c, si, opts)
}

// zoneTable maps zone names to dense indexes: the capacity's zones first,
// then zones met only on endpoints.
type zoneTable struct {
	names []string
	hints []*Hints // shared same-zone hint per index
	known int      // how many of names are capacity zones
	// index maps every name to its index once there are more capacity
	// zones than a linear scan handles well, or any extra zone.
	index map[string]int
}

const linearZones = 8

func newZoneTable(c Capacity) zoneTable {
	t := zoneTable{names: c.zones, known: len(c.zones), hints: make([]*Hints, len(c.zones))}
	if len(c.zones) > linearZones {
		t.index = make(map[string]int, len(c.zones))
		for i, z := range c.zones {
			t.index[z] = i
		}
	}
	return t
}

// lookup returns zone's index, or -1 when it is not a capacity zone.
func (t *zoneTable) lookup(zone string) int {
	if t.known <= linearZones {
		for i := 0; i < t.known; i++ {
			if t.names[i] == zone {
				return i
			}
		}
		return -1
	}
	if i, ok := t.index[zone]; ok && i < t.known {
		return i
	}
	return -1
}

// intern returns zone's index, adding it when unknown.
func (t *zoneTable) intern(zone string) int {
	if i := t.lookup(zone); i >= 0 {
		return i
	}
	if t.index == nil {
		t.index = map[string]int{}
	}
	if i, ok := t.index[zone]; ok {
		return i
	}
	i := len(t.names)
	if i == t.known {
		t.names = append([]string(nil), t.names...) // never grow c.zones in place
	}
	t.names = append(t.names, zone)
	t.hints = append(t.hints, nil)
	t.index[zone] = i
	return i
}

// hint returns the shared same-zone hint for index i.
func (t *zoneTable) hint(i int) *Hints {
	if t.hints[i] == nil {
		t.hints[i] = &Hints{ForZones: []string{t.names[i]}}
	}
	return t.hints[i]
}

func (t *zoneTable) countsMap(counts []int) map[string]int {
	m := make(map[string]int, len(counts))
	for i, n := range counts {
		if n != 0 {
			m[t.names[i]] = n
		}
	}
	return m
}

// disable removes every hint from si and reports fb.
func disable(si *SliceInfo, fb Fallback) Result {
	RemoveHints(si)
	return Result{Fallback: fb, HintsByZone: map[string]int{}, Events: []Event{{
		Type: "Warning", Reason: "TopologyAwareHintsDisabled", Message: fb.EventMessage(si.AddressType),
	}}}
}

func enabled(si *SliceInfo, opts Options, byZone map[string]int) Result {
	r := Result{HintsByZone: byZone}
	if !opts.HadHints {
		r.Events = []Event{{Type: "Normal", Reason: "TopologyAwareHintsEnabled",
			Message: WithAddressType(MsgTopologyAwareHintsEnabled, si.AddressType)}}
	}
	return r
}

// keepValidUnchanged is upstream's validation of the unchanged slices'
// hints: walking them in order, a slice keeps its hints (and stays
// unchanged) when every ready endpoint has zone hints, all for allocated
// zones, and adding its hints per zone to allocated keeps each zone at or
// below limit[zone]; otherwise a copy moves to ToUpdate. allocated
// accumulates the kept slices' hints; it reports whether any were kept
// (upstream's map then has keys).
func keepValidUnchanged(si *SliceInfo, t *zoneTable, limit func(int) int, allocated []int) bool {
	per := make([]int, t.known)
	kept := false
	j := 0
	for _, s := range si.Unchanged {
		valid := true
	scan:
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if !isReady(e) {
				continue
			}
			if e.Hints == nil || len(e.Hints.ForZones) == 0 {
				valid = false
				break
			}
			for _, z := range e.Hints.ForZones {
				zi := t.lookup(z)
				if zi < 0 {
					valid = false
					break scan
				}
				per[zi]++
			}
		}
		if valid {
			for zi, n := range per {
				if n > 0 && allocated[zi]+n > limit(zi) {
					valid = false
					break
				}
			}
		}
		if valid {
			for zi, n := range per {
				if n > 0 {
					allocated[zi] += n
					kept = true
				}
			}
			si.Unchanged[j] = s
			j++
		} else {
			si.ToUpdate = append(si.ToUpdate, cloneSlice(s))
		}
		clear(per)
	}
	si.Unchanged = si.Unchanged[:j]
	return kept
}

func addHintsUpstream(c Capacity, si *SliceInfo, opts Options) Result {
	t := newZoneTable(c)
	// Step 1 first, in the same pass that counts the ready endpoints being
	// written: every ready endpoint being written serves its own zone.
	// Upstream checks the allocation and the unchanged slices first; when
	// either fallback applies all hints are removed anyway, so doing step 1
	// early changes no outcome and saves passes over the endpoints.
	own := make([]int, t.known, t.known+2)
	n, zoneless := hintOwnZone(si.ToCreate, &t, &own)
	k, z := hintOwnZone(si.ToUpdate, &t, &own)
	n, zoneless = n+k, zoneless || z
	written := n
	for _, s := range si.Unchanged {
		for i := range s.Endpoints {
			if isReady(&s.Endpoints[i]) {
				n++
			}
		}
	}
	alloc := make([]Allocation, len(c.zones))
	if fb := c.allocateInto(alloc, n); fb.Reason != NoReason {
		return disable(si, fb)
	}
	allocated := make([]int, len(own))
	moved := len(si.ToUpdate)
	kept := keepValidUnchanged(si, &t, func(i int) int { return alloc[i].Maximum }, allocated)
	k, z = hintOwnZone(si.ToUpdate[moved:], &t, &own)
	n, zoneless = written+k, zoneless || z
	if zoneless {
		return disable(si, Fallback{Reason: NoZoneSpecified})
	}
	any := kept || n > 0
	if len(own) > len(allocated) {
		allocated = append(allocated, make([]int, len(own)-len(allocated))...)
	}
	for i, k := range own {
		allocated[i] += k
	}

	// Step 2: whole endpoints to move from zones above their target to zones
	// below it.
	give, recv, order := givingAndReceiving(alloc, allocated)

	// Step 3: move them, first endpoints first.
	if give != nil {
		redistribute(si, &t, give, recv, order, allocated)
	}
	if !any {
		return disable(si, Fallback{Reason: NoAllocatedHintsForZones})
	}
	return enabled(si, opts, t.countsMap(allocated))
}

// hintOwnZone is upstream's step 1 on list: every ready endpoint with a
// zone is hinted for its own zone and counted in own (extended for zones
// outside the capacity). It returns the ready endpoints seen and whether
// one had no zone.
func hintOwnZone(list []*Slice, t *zoneTable, own *[]int) (ready int, zoneless bool) {
	counts := *own
	for _, s := range list {
		eps := s.Endpoints
		for i := range eps {
			e := &eps[i]
			if e.Conditions.Ready != True {
				continue // upstream leaves not-ready endpoints' hints alone
			}
			ready++
			if e.Zone == "" {
				zoneless = true
				continue
			}
			zi := t.lookup(e.Zone)
			if zi < 0 {
				zi = t.intern(e.Zone)
				counts = append(counts, make([]int, len(t.names)-len(counts))...)
			}
			counts[zi]++
			e.Hints = t.hint(zi)
		}
	}
	*own = counts
	return ready, zoneless
}

// givingAndReceiving is upstream's getGivingAndReceivingZones: the float
// surplus and deficit of each zone against its target; repeatedly the zone
// with the largest surplus gives one endpoint to the zone with the largest
// deficit (ties to the first zone in order), until one side runs out, both
// are below 1, or either is below 0.5. It returns nil, nil when nothing
// moves; order lists the receiving zones in the order they first received.
func givingAndReceiving(alloc []Allocation, allocated []int) (give, recv, order []int) {
	z := len(alloc)
	var buf [16]float64
	var f []float64
	if 2*z <= len(buf) {
		f = buf[:2*z]
	} else {
		f = make([]float64, 2*z)
	}
	surplus, deficit := f[:z], f[z:]
	for i := range alloc {
		have := float64(allocated[i])
		if have > alloc[i].Desired {
			surplus[i] = have - alloc[i].Desired
		} else if have < alloc[i].Desired {
			deficit[i] = alloc[i].Desired - have
		}
	}
	for {
		g, gv := most(surplus)
		r, rv := most(deficit)
		if g < 0 || r < 0 || (gv < 1 && rv < 1) || gv < 0.5 || rv < 0.5 {
			return give, recv, order
		}
		if give == nil {
			give, recv = make([]int, z), make([]int, z)
		}
		if recv[r] == 0 {
			order = append(order, r)
		}
		give[g]++
		surplus[g]--
		recv[r]++
		deficit[r]--
	}
}

// most returns the first index holding the largest positive value, or -1.
func most(v []float64) (int, float64) {
	best, bv := -1, 0.0
	for i, x := range v {
		if x > bv {
			best, bv = i, x
		}
	}
	return best, bv
}

// redistribute is upstream's redistributeHints: walking the slices being
// written in order, a ready endpoint whose zone still has endpoints to give
// is re-hinted for a zone still receiving, until either side is exhausted.
// Upstream takes the first receiving zone in Go map order; here it is the
// first in order (the order in which zones first received), which is the
// order upstream's small maps most often iterate in (insertion order), so
// that the counts per zone agree with upstream's likeliest outcome when
// the giving zones run out of endpoints to move.
func redistribute(si *SliceInfo, t *zoneTable, give, recv, order, allocated []int) {
	toGive, toRecv := 0, 0
	for i := range give {
		toGive += give[i]
		toRecv += recv[i]
	}
	for _, list := range [...][]*Slice{si.ToCreate, si.ToUpdate} {
		for _, s := range list {
			for i := range s.Endpoints {
				e := &s.Endpoints[i]
				if !isReady(e) {
					continue
				}
				if toGive == 0 || toRecv == 0 {
					return
				}
				g := t.lookup(e.Zone)
				if g < 0 || give[g] == 0 {
					continue
				}
				k := 0
				for recv[order[k]] == 0 {
					k++
				}
				r := order[k]
				e.Hints = t.hint(r)
				give[g]--
				recv[r]--
				toGive--
				toRecv--
				allocated[r]++
				allocated[g]--
			}
		}
	}
}
