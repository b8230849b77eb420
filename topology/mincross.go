package topology

// grouping partitions the capacity zones into groups whose endpoints are
// hinted for every zone of the group; the identity grouping is single-zone
// hints.
type grouping struct {
	of    []int      // zone index -> group
	names [][]string // zones of each group, in zone order
	milli []int64    // CPU of each group
	hints []*Hints   // shared hint of each group
}

// newGrouping builds the grouping with group of[i] for zone i (groups
// numbered from 0 in order of first appearance).
func newGrouping(c Capacity, of []int) grouping {
	ng := 0
	for _, g := range of {
		ng = max(ng, g+1)
	}
	gr := grouping{of: of, names: make([][]string, ng), milli: make([]int64, ng), hints: make([]*Hints, ng)}
	for i, g := range of {
		gr.names[g] = append(gr.names[g], c.zones[i])
		gr.milli[g] += c.milli[i]
	}
	for g := range gr.hints {
		gr.hints[g] = &Hints{ForZones: gr.names[g]}
	}
	return gr
}

// groupOf returns the group an endpoint's hints name exactly, or -1.
func (gr *grouping) groupOf(t *zoneTable, h *Hints) int {
	if h == nil || len(h.ForNodes) != 0 || len(h.ForZones) == 0 {
		return -1
	}
	zi := t.lookup(h.ForZones[0])
	if zi < 0 {
		return -1
	}
	g := gr.of[zi]
	if len(h.ForZones) != len(gr.names[g]) {
		return -1
	}
	for k, z := range h.ForZones {
		if z != gr.names[g][k] {
			return -1
		}
	}
	return g
}

// groupMinimums is minimums over groups.
func groupMinimums(gr grouping, n int, threshold float64) []int {
	return minimums(Capacity{zones: make([]string, len(gr.milli)), milli: gr.milli}, n, threshold)
}

// maxGroupedZones bounds the zones for which AllocatorMinCrossZone tries
// every grouping (Bell(6) = 203 partitions). Single-zone hints can only
// fail to fit for fewer than 6 endpoints per zone, so trials are small.
const maxGroupedZones = 6

// addHintsMinCross is AllocatorMinCrossZone.
func addHintsMinCross(c Capacity, si *SliceInfo, opts Options) Result {
	n := si.readyEndpoints()
	if !c.ok {
		return disable(si, Fallback{Reason: InsufficientNodeInfo})
	}
	z := len(c.zones)
	threshold := OverloadThreshold
	sticky := opts.HadHints && opts.Hysteresis > 0 && opts.Hysteresis <= 10 // NaN and nonsense count as 0
	if sticky {
		threshold += opts.Hysteresis
	}
	of := make([]int, z)
	for i := range of {
		of[i] = i
	}
	gr := newGrouping(c, of)
	if !fits(groupMinimums(gr, n, threshold), n) {
		// No single-zone assignment keeps every endpoint within the
		// threshold: try hinting groups of zones for each other's
		// endpoints, and keep the grouping with the least cross-zone
		// traffic.
		best, bestCross := -1, 2.0
		var candidates []grouping
		if z <= maxGroupedZones && n > 0 {
			forEachPartition(z, func(of []int) {
				g := newGrouping(c, append([]int(nil), of...))
				if len(g.names) == 1 || !fits(groupMinimums(g, n, threshold), n) {
					return
				}
				trial := &SliceInfo{AddressType: si.AddressType, ToCreate: cloneAll(si.ToCreate), ToUpdate: cloneAll(si.ToUpdate),
					Unchanged: append([]*Slice(nil), si.Unchanged...)}
				assignGroups(c, trial, g, groupMinimums(g, n, threshold), sticky)
				if q := Evaluate(c, slicesOf(trial)); q.CrossZone < bestCross-1e-12 {
					best, bestCross = len(candidates), q.CrossZone
				}
				candidates = append(candidates, g)
			})
		}
		if best < 0 {
			if z > n {
				return disable(si, Fallback{Reason: InsufficientNumberOfEndpoints, Endpoints: n, Zones: z})
			}
			return disable(si, Fallback{Reason: MinAllocationExceedsOverloadThreshold, Endpoints: n, Zones: z})
		}
		gr = candidates[best]
	}
	assignGroups(c, si, gr, groupMinimums(gr, n, threshold), sticky)
	return enabled(si, opts, hintsByZone(si))
}

func fits(need []int, n int) bool {
	sum := 0
	for _, m := range need {
		sum += m
	}
	return sum <= n && n > 0
}

func cloneAll(list []*Slice) []*Slice {
	out := make([]*Slice, len(list))
	for i, s := range list {
		out[i] = cloneSlice(s)
	}
	return out
}

func slicesOf(si *SliceInfo) []*Slice {
	out := make([]*Slice, 0, len(si.ToCreate)+len(si.ToUpdate)+len(si.Unchanged))
	out = append(out, si.ToCreate...)
	out = append(out, si.ToUpdate...)
	return append(out, si.Unchanged...)
}

// forEachPartition calls f with every partition of n items, as restricted
// growth strings (of[i] is item i's block; blocks numbered in order of
// first appearance).
func forEachPartition(n int, f func(of []int)) {
	of := make([]int, n)
	var rec func(i, blocks int)
	rec = func(i, blocks int) {
		if i == n {
			f(of)
			return
		}
		for b := 0; b <= blocks; b++ {
			of[i] = b
			rec(i+1, max(blocks, b+1))
		}
	}
	rec(0, 0)
}

// assignGroups hints si for grouping gr so that each group gets at least
// need[g] endpoints, moving as few endpoints between groups as it can. Its
// steps: keep the unchanged slices whose hints already name one group per
// ready endpoint (keepUnchanged), count the flexible endpoints
// (countFlexible), rewrite kept slices whose cross-group hints are no longer
// needed (dropStale), pull kept slices into the plan until the flexible
// endpoints can cover every shortfall (pullUntilCoverable), move the pulled
// slices to ToUpdate (movePulled), decide who gives endpoints to whom
// (plan), and write the hints (realize).
func assignGroups(c Capacity, si *SliceInfo, gr grouping, need []int, sticky bool) {
	a := &assignment{si: si, gr: &gr, t: newZoneTable(c), need: need, sticky: sticky}
	a.keepUnchanged()
	a.countFlexible()
	a.dropStale()
	a.pullUntilCoverable()
	a.movePulled()
	a.plan()
	a.realize()
}

// assignment is the state of one assignGroups call. Flexible endpoints are
// the ready endpoints of slices being written (and of unchanged slices
// pulled in); fixed ones are held by kept unchanged slices.
type assignment struct {
	si     *SliceInfo
	gr     *grouping
	t      zoneTable
	need   []int
	sticky bool

	kept  []bool // per unchanged slice: its hints stay
	fixed []int  // hints per group held by kept slices
	own   []int  // flexible endpoints per own group
	free  int    // flexible endpoints without a capacity zone

	give      []int // endpoints each group gives to others
	fromFree  []int // free endpoints hinted for each group
	fromGiver []int // endpoints of giving groups hinted for each group
}

// groupOfZone returns the group of a zone, or -1 when it has no capacity.
func (a *assignment) groupOfZone(zone string) int {
	if zi := a.t.lookup(zone); zi >= 0 {
		return a.gr.of[zi]
	}
	return -1
}

// keepUnchanged keeps the unchanged slices whose ready endpoints are each
// hinted for exactly one group, and counts their hints in fixed.
func (a *assignment) keepUnchanged() {
	a.kept = make([]bool, len(a.si.Unchanged))
	a.fixed = make([]int, len(a.need))
	for k, s := range a.si.Unchanged {
		ok := true
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if !isReady(e) {
				continue
			}
			if a.gr.groupOf(&a.t, e.Hints) < 0 {
				ok = false
				break
			}
		}
		if ok {
			a.kept[k] = true
			forReady(s, func(e *Endpoint) { a.fixed[a.gr.groupOf(&a.t, e.Hints)]++ })
		}
	}
}

// countFlexible counts the flexible endpoints per own group (own), and
// those without a capacity zone (free).
func (a *assignment) countFlexible() {
	a.own = make([]int, len(a.need))
	for _, list := range [...][]*Slice{a.si.ToCreate, a.si.ToUpdate} {
		for _, s := range list {
			a.count(s)
		}
	}
	for k, s := range a.si.Unchanged {
		if !a.kept[k] {
			a.count(s)
		}
	}
}

// count adds the ready endpoints of s to the flexible ones.
func (a *assignment) count(s *Slice) {
	forReady(s, func(e *Endpoint) {
		if g := a.groupOfZone(e.Zone); g >= 0 {
			a.own[g]++
		} else {
			a.free++
		}
	})
}

// pull moves kept unchanged slice k into the plan.
func (a *assignment) pull(k int) {
	a.kept[k] = false
	forReady(a.si.Unchanged[k], func(e *Endpoint) { a.fixed[a.gr.groupOf(&a.t, e.Hints)]-- })
	a.count(a.si.Unchanged[k])
}

// dropStale pulls the kept slices holding an endpoint hinted for another
// group than its own that is no longer needed there. Such an endpoint stays
// only while its own group is not short and (without hysteresis) the other
// group still needs that many endpoints from elsewhere, so that cross-zone
// hints never exceed what the threshold requires.
func (a *assignment) dropStale() {
	ng := len(a.need)
	located := make([]int, ng) // ready endpoints located in each group
	for _, list := range [...][]*Slice{a.si.ToCreate, a.si.ToUpdate, a.si.Unchanged} {
		for _, s := range list {
			forReady(s, func(e *Endpoint) {
				if g := a.groupOfZone(e.Zone); g >= 0 {
					located[g]++
				}
			})
		}
	}
	crossInto := make([]int, ng)
	for k, s := range a.si.Unchanged {
		if a.kept[k] {
			forReady(s, func(e *Endpoint) {
				if og, hg := a.groupOfZone(e.Zone), a.gr.groupOf(&a.t, e.Hints); og >= 0 && og != hg {
					crossInto[hg]++
				}
			})
		}
	}
	for k, s := range a.si.Unchanged {
		if !a.kept[k] {
			continue
		}
		stale := false
		forReady(s, func(e *Endpoint) {
			og, hg := a.groupOfZone(e.Zone), a.gr.groupOf(&a.t, e.Hints)
			if og < 0 || og == hg {
				return
			}
			if (!a.sticky && crossInto[hg] > max(0, a.need[hg]-located[hg])) || a.fixed[og]+a.own[og] < a.need[og] {
				stale = true
			}
		})
		if stale {
			forReady(s, func(e *Endpoint) {
				if og, hg := a.groupOfZone(e.Zone), a.gr.groupOf(&a.t, e.Hints); og >= 0 && og != hg {
					crossInto[hg]--
				}
			})
			a.pull(k)
		}
	}
}

// pullUntilCoverable pulls kept slices into the plan until the flexible
// endpoints can cover every group's shortfall.
func (a *assignment) pullUntilCoverable() {
	for !coverable(a.need, a.fixed, a.own, a.free) {
		k := pullCandidate(a.si.Unchanged, a.kept, &a.t, a.gr, a.need, a.fixed, a.own)
		if k < 0 {
			break // cannot happen: with nothing kept, coverable is sum <= n
		}
		a.pull(k)
	}
}

// movePulled moves the unchanged slices not kept to ToUpdate, in order.
func (a *assignment) movePulled() {
	si := a.si
	j := 0
	for k, s := range si.Unchanged {
		if a.kept[k] {
			si.Unchanged[j] = s
			j++
		} else {
			si.ToUpdate = append(si.ToUpdate, cloneSlice(s))
		}
	}
	si.Unchanged = si.Unchanged[:j]
}

// plan decides where flexible endpoints are hinted: each group keeps its
// own except what it must give; shortfalls are covered by free endpoints
// first, then by the groups with the most to spare; free endpoints left
// over go where the load per endpoint is highest.
func (a *assignment) plan() {
	ng := len(a.need)
	short := make([]int, ng)
	spare := make([]int, ng)
	a.give = make([]int, ng)
	for i := range a.need {
		have := a.fixed[i] + a.own[i]
		if have < a.need[i] {
			short[i] = a.need[i] - have
		} else {
			spare[i] = min(a.own[i], have-a.need[i])
		}
	}
	a.fromFree = make([]int, ng)
	a.fromGiver = make([]int, ng)
	free := a.free
	for i := range short {
		take := min(short[i], free)
		a.fromFree[i] += take
		free -= take
		for k := take; k < short[i]; k++ {
			g := argmax(spare)
			spare[g]--
			a.give[g]++
			a.fromGiver[i]++
		}
	}
	final := make([]int, ng)
	for i := range final {
		final[i] = a.fixed[i] + a.own[i] - a.give[i] + a.fromFree[i] + a.fromGiver[i]
	}
	for ; free > 0; free-- {
		best, bl := 0, -1.0
		for i := range final {
			if l := float64(a.gr.milli[i]) / float64(final[i]+1); l > bl {
				best, bl = i, l
			}
		}
		final[best]++
		a.fromFree[best]++
	}
}

// realize writes the plan's hints into the slices being written, in order.
// Not-ready endpoints lose their hints (upstream leaves them).
func (a *assignment) realize() {
	for _, list := range [...][]*Slice{a.si.ToCreate, a.si.ToUpdate} {
		for _, s := range list {
			for i := range s.Endpoints {
				e := &s.Endpoints[i]
				if !isReady(e) {
					e.Hints = nil
					continue
				}
				g := a.groupOfZone(e.Zone)
				switch {
				case g < 0:
					r := firstPositive(a.fromFree)
					a.fromFree[r]--
					e.Hints = a.gr.hints[r]
				case a.give[g] > 0:
					r := firstPositive(a.fromGiver)
					a.fromGiver[r]--
					a.give[g]--
					e.Hints = a.gr.hints[r]
				default:
					e.Hints = a.gr.hints[g]
				}
			}
		}
	}
}

func forReady(s *Slice, f func(*Endpoint)) {
	for i := range s.Endpoints {
		if isReady(&s.Endpoints[i]) {
			f(&s.Endpoints[i])
		}
	}
}

// coverable reports whether flexible endpoints (own per zone, and free) can
// bring every zone to need, given the hints fixed by kept slices: the
// shortfalls must not exceed the free endpoints plus what zones can spare of
// their own flexible endpoints.
func coverable(need, fixed, own []int, free int) bool {
	short, spare := 0, free
	for i := range need {
		have := fixed[i] + own[i]
		if have < need[i] {
			short += need[i] - have
		} else {
			spare += min(own[i], have-need[i])
		}
	}
	return short <= spare
}

// pullCandidate picks the kept slice to rewrite next: the first whose ready
// endpoints hint a zone other than their own (fixing a stale move), else
// the first holding endpoints of a zone that has hints to spare but too few
// flexible endpoints to give them, else the first kept slice.
func pullCandidate(unchanged []*Slice, kept []bool, t *zoneTable, gr *grouping, need, fixed, own []int) int {
	first, stuck := -1, -1
	for k, s := range unchanged {
		if !kept[k] {
			continue
		}
		if first < 0 {
			first = k
		}
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if !isReady(e) {
				continue
			}
			hz := gr.groupOf(t, e.Hints)
			oz := -1
			if zi := t.lookup(e.Zone); zi >= 0 {
				oz = gr.of[zi]
			}
			if oz != hz {
				return k
			}
			if stuck < 0 && fixed[oz]+own[oz]-need[oz] > own[oz] {
				stuck = k
			}
		}
	}
	if stuck >= 0 {
		return stuck
	}
	return first
}

func argmax(v []int) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func firstPositive(v []int) int {
	for i, x := range v {
		if x > 0 {
			return i
		}
	}
	panic("topology: internal error: plan ran out of endpoints")
}
