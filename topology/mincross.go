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

// addHintsMinCross is AllocatorMinCrossZone.
func addHintsMinCross(c Capacity, si *SliceInfo, opts Options) Result {
	n := si.readyEndpoints()
	if !c.ok {
		return disable(si, Fallback{Reason: InsufficientNodeInfo})
	}
	z := len(c.zones)
	threshold := OverloadThreshold
	sticky := opts.HadHints && opts.Hysteresis > 0
	if sticky {
		threshold += opts.Hysteresis
	}
	need := minimums(c, n, threshold)
	sum := 0
	for _, m := range need {
		sum += m
	}
	if sum > n || n == 0 {
		if z > n {
			return disable(si, Fallback{Reason: InsufficientNumberOfEndpoints, Endpoints: n, Zones: z})
		}
		return disable(si, Fallback{Reason: MinAllocationExceedsOverloadThreshold, Endpoints: n, Zones: z})
	}
	t := newZoneTable(c)

	// Unchanged slices keep their hints when every ready endpoint has one
	// zone hint for a capacity zone: its own zone (or any, for an endpoint
	// outside the capacity zones), or with hysteresis any zone.
	kept := make([]bool, len(si.Unchanged))
	fixed := make([]int, z) // hints per zone held by kept slices
	for k, s := range si.Unchanged {
		ok := true
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if !isReady(e) {
				continue
			}
			h := e.Hints
			if h == nil || len(h.ForZones) != 1 || len(h.ForNodes) != 0 {
				ok = false
				break
			}
			hz := t.lookup(h.ForZones[0])
			own := t.lookup(e.Zone)
			if hz < 0 || (!sticky && own >= 0 && hz != own) {
				ok = false
				break
			}
		}
		if ok {
			kept[k] = true
			forReady(s, func(e *Endpoint) { fixed[t.lookup(e.Hints.ForZones[0])]++ })
		}
	}
	// Flexible endpoints: the ready endpoints of slices being written (and
	// of unchanged slices pulled in), per own zone; free ones have no
	// capacity zone.
	own := make([]int, z)
	free := 0
	count := func(s *Slice, sign int) {
		forReady(s, func(e *Endpoint) {
			if zi := t.lookup(e.Zone); zi >= 0 {
				own[zi] += sign
			} else {
				free += sign
			}
		})
	}
	for _, list := range [...][]*Slice{si.ToCreate, si.ToUpdate} {
		for _, s := range list {
			count(s, 1)
		}
	}
	for k, s := range si.Unchanged {
		if !kept[k] {
			count(s, 1)
		}
	}
	// Pull kept slices into the plan until the flexible endpoints can cover
	// every zone's shortfall.
	for !coverable(need, fixed, own, free) {
		k := pullCandidate(si.Unchanged, kept, &t, need, fixed, own)
		if k < 0 {
			break // cannot happen: with nothing kept, coverable is sum <= n
		}
		kept[k] = false
		forReady(si.Unchanged[k], func(e *Endpoint) { fixed[t.lookup(e.Hints.ForZones[0])]-- })
		count(si.Unchanged[k], 1)
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

	// Plan: each zone keeps its own flexible endpoints except what it must
	// give; shortfalls are covered by free endpoints first, then by the zones
	// with the most to spare.
	short := make([]int, z)
	give := make([]int, z)
	spare := make([]int, z)
	for i := range need {
		have := fixed[i] + own[i]
		if have < need[i] {
			short[i] = need[i] - have
		} else {
			spare[i] = min(own[i], have-need[i])
		}
	}
	fromFree := make([]int, z)  // free endpoints hinted for each zone
	fromGiver := make([]int, z) // endpoints of giving zones hinted for each zone
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
	final := make([]int, z)
	for i := range final {
		final[i] = fixed[i] + own[i] - give[i] + fromFree[i] + fromGiver[i]
	}
	// Free endpoints left over go where the load per endpoint is highest.
	for ; free > 0; free-- {
		best, bl := 0, -1.0
		for i := range final {
			if l := c.ratio[i] / float64(final[i]+1); l > bl {
				best, bl = i, l
			}
		}
		final[best]++
		fromFree[best]++
	}
	// Realize the plan in the slices being written, in order.
	for _, list := range [...][]*Slice{si.ToCreate, si.ToUpdate} {
		for _, s := range list {
			for i := range s.Endpoints {
				e := &s.Endpoints[i]
				if !isReady(e) {
					e.Hints = nil
					continue
				}
				zi := t.lookup(e.Zone)
				switch {
				case zi < 0:
					r := firstPositive(fromFree)
					fromFree[r]--
					e.Hints = t.hint(r)
				case give[zi] > 0:
					r := firstPositive(fromGiver)
					fromGiver[r]--
					give[zi]--
					e.Hints = t.hint(r)
				default:
					e.Hints = t.hint(zi)
				}
			}
		}
	}
	return enabled(si, opts, t.countsMap(final))
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
func pullCandidate(unchanged []*Slice, kept []bool, t *zoneTable, need, fixed, own []int) int {
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
			hz := t.lookup(e.Hints.ForZones[0])
			oz := t.lookup(e.Zone)
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
