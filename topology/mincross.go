package topology

import "math"

// minimums returns, per capacity zone, the fewest hinted endpoints that keep
// the zone's endpoints within threshold of their fair load for n ready
// endpoints: ceil(share × n / (1+threshold)), computed so that an exact
// integer quotient is not pushed up by float rounding (upstream's
// expression can be one too high, for example 18 endpoints over 3 equal
// zones gives 6 where 5 suffice).
func minimums(c Capacity, n int, threshold float64) []int {
	total := int64(0)
	for _, m := range c.milli {
		total += m
	}
	out := make([]int, len(c.zones))
	for i, m := range c.milli {
		if threshold == OverloadThreshold {
			// ceil(m·n / (1.2·total)) = ceil(5·m·n / (6·total)), in integers
			// while they fit.
			num, den := 5*m*int64(n), 6*total
			if m <= math.MaxInt64/5/max(int64(n), 1) {
				out[i] = int((num + den - 1) / den)
				continue
			}
		}
		out[i] = int(math.Ceil(float64(m)*float64(n)/(float64(total)*(1+threshold)) - 1e-9))
	}
	return out
}

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
// need[g] endpoints, moving as few endpoints between groups as it can.
func assignGroups(c Capacity, si *SliceInfo, gr grouping, need []int, sticky bool) {
	t := newZoneTable(c)
	ng := len(need)
	groupOfZone := func(zone string) int {
		if zi := t.lookup(zone); zi >= 0 {
			return gr.of[zi]
		}
		return -1
	}
	// Unchanged slices keep their hints when every ready endpoint is hinted
	// for exactly one group, and any endpoint hinted for another group than
	// its own is still needed there (below).
	kept := make([]bool, len(si.Unchanged))
	fixed := make([]int, ng) // hints per group held by kept slices
	for k, s := range si.Unchanged {
		ok := true
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if !isReady(e) {
				continue
			}
			if gr.groupOf(&t, e.Hints) < 0 {
				ok = false
				break
			}
		}
		if ok {
			kept[k] = true
			forReady(s, func(e *Endpoint) { fixed[gr.groupOf(&t, e.Hints)]++ })
		}
	}
	// Flexible endpoints: the ready endpoints of slices being written (and
	// of unchanged slices pulled in), per own group; free ones have no
	// capacity zone.
	own := make([]int, ng)
	free := 0
	count := func(s *Slice) {
		forReady(s, func(e *Endpoint) {
			if g := groupOfZone(e.Zone); g >= 0 {
				own[g]++
			} else {
				free++
			}
		})
	}
	for _, list := range [...][]*Slice{si.ToCreate, si.ToUpdate} {
		for _, s := range list {
			count(s)
		}
	}
	for k, s := range si.Unchanged {
		if !kept[k] {
			count(s)
		}
	}
	pull := func(k int) {
		kept[k] = false
		forReady(si.Unchanged[k], func(e *Endpoint) { fixed[gr.groupOf(&t, e.Hints)]-- })
		count(si.Unchanged[k])
	}
	// A kept endpoint hinted for another group than its own stays only
	// while its own group is not short and (without hysteresis) the other
	// group still needs that many endpoints from elsewhere: otherwise its
	// slice is rewritten, so that cross-zone hints never exceed what the
	// threshold requires.
	located := make([]int, ng) // ready endpoints located in each group
	for _, list := range [...][]*Slice{si.ToCreate, si.ToUpdate, si.Unchanged} {
		for _, s := range list {
			forReady(s, func(e *Endpoint) {
				if g := groupOfZone(e.Zone); g >= 0 {
					located[g]++
				}
			})
		}
	}
	crossInto := make([]int, ng)
	for k, s := range si.Unchanged {
		if kept[k] {
			forReady(s, func(e *Endpoint) {
				if og, hg := groupOfZone(e.Zone), gr.groupOf(&t, e.Hints); og >= 0 && og != hg {
					crossInto[hg]++
				}
			})
		}
	}
	for k, s := range si.Unchanged {
		if !kept[k] {
			continue
		}
		stale := false
		forReady(s, func(e *Endpoint) {
			og, hg := groupOfZone(e.Zone), gr.groupOf(&t, e.Hints)
			if og < 0 || og == hg {
				return
			}
			if (!sticky && crossInto[hg] > max(0, need[hg]-located[hg])) || fixed[og]+own[og] < need[og] {
				stale = true
			}
		})
		if stale {
			forReady(s, func(e *Endpoint) {
				if og, hg := groupOfZone(e.Zone), gr.groupOf(&t, e.Hints); og >= 0 && og != hg {
					crossInto[hg]--
				}
			})
			pull(k)
		}
	}
	// Pull kept slices into the plan until the flexible endpoints can cover
	// every group's shortfall.
	for !coverable(need, fixed, own, free) {
		k := pullCandidate(si.Unchanged, kept, &t, &gr, need, fixed, own)
		if k < 0 {
			break // cannot happen: with nothing kept, coverable is sum <= n
		}
		pull(k)
	}
	// Move the non-kept unchanged slices to ToUpdate, in order.
	j := 0
	for k, s := range si.Unchanged {
		if kept[k] {
			si.Unchanged[j] = s
			j++
		} else {
			si.ToUpdate = append(si.ToUpdate, cloneSlice(s))
		}
	}
	si.Unchanged = si.Unchanged[:j]

	// Plan: each group keeps its own flexible endpoints except what it must
	// give; shortfalls are covered by free endpoints first, then by the
	// groups with the most to spare.
	short := make([]int, ng)
	give := make([]int, ng)
	spare := make([]int, ng)
	for i := range need {
		have := fixed[i] + own[i]
		if have < need[i] {
			short[i] = need[i] - have
		} else {
			spare[i] = min(own[i], have-need[i])
		}
	}
	fromFree := make([]int, ng)  // free endpoints hinted for each group
	fromGiver := make([]int, ng) // endpoints of giving groups hinted for each group
	for i := range short {
		take := min(short[i], free)
		fromFree[i] += take
		free -= take
		for k := take; k < short[i]; k++ {
			g := argmax(spare)
			spare[g]--
			give[g]++
			fromGiver[i]++
		}
	}
	final := make([]int, ng)
	for i := range final {
		final[i] = fixed[i] + own[i] - give[i] + fromFree[i] + fromGiver[i]
	}
	// Free endpoints left over go where the load per endpoint is highest.
	for ; free > 0; free-- {
		best, bl := 0, -1.0
		for i := range final {
			if l := float64(gr.milli[i]) / float64(final[i]+1); l > bl {
				best, bl = i, l
			}
		}
		final[best]++
		fromFree[best]++
	}
	// Realize the plan in the slices being written, in order. Not-ready
	// endpoints lose their hints (upstream leaves them).
	for _, list := range [...][]*Slice{si.ToCreate, si.ToUpdate} {
		for _, s := range list {
			for i := range s.Endpoints {
				e := &s.Endpoints[i]
				if !isReady(e) {
					e.Hints = nil
					continue
				}
				g := groupOfZone(e.Zone)
				switch {
				case g < 0:
					r := firstPositive(fromFree)
					fromFree[r]--
					e.Hints = gr.hints[r]
				case give[g] > 0:
					r := firstPositive(fromGiver)
					fromGiver[r]--
					give[g]--
					e.Hints = gr.hints[r]
				default:
					e.Hints = gr.hints[g]
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
