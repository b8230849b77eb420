package adapter

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/fairslice/fairslice/slicer"
)

// maxDelta is the most replaced pods a sync may have to be planned from
// the remembered no-op sync; beyond it the full path is as cheap.
const maxDelta = 16

// fromMemory plans a sync from the last no-op sync when the facts, the
// Service spec, the node zones and the slice objects are the same and at
// most maxDelta pods were replaced, each by an object of the same
// identity, port set and address types (see Plan). ok is false when the
// full path must run; nothing the full path relies on is changed then.
func (s *Syncer) fromMemory(facts slicer.Service, svc *corev1.Service, pods []*corev1.Pod, nodes NodeGetter,
	existing []*discovery.EndpointSlice) (plan slicer.Plan, ok bool) {
	c := &s.conv
	if checkArgs(svc, pods, nodes) != nil || !s.last.valid || len(pods) != s.last.pods || len(existing) != s.last.slices ||
		!sameFacts(&facts, &s.last.facts) {
		return slicer.Plan{}, false
	}
	if err := c.revalidate(svc, nodes); err != nil || c.epoch != s.last.epoch || !c.sameSlices(existing) {
		return slicer.Plan{}, false
	}
	added, missing, ok := s.delta(svc, pods, nodes)
	if !ok {
		return slicer.Plan{}, false
	}
	if len(added) == 0 {
		s.hits++
		return s.lastPlan(nil), true
	}
	changes, ok := c.pair(added, missing)
	if !ok {
		return slicer.Plan{}, false
	}
	if len(changes) == 0 {
		s.hits++
		return s.lastPlan(nil), true
	}
	updates, ok := s.rewrite(facts, existing, changes)
	if !ok {
		return slicer.Plan{}, false
	}
	s.incrs++
	plan = s.lastPlan(updates)
	return plan, true
}

// lastPlan returns the remembered no-op plan with updates (sorted as the
// full path sorts them) taken out of Unchanged.
func (s *Syncer) lastPlan(updates []slicer.Slice) slicer.Plan {
	p := s.last.plan
	p.Unchanged = make([]slicer.Slice, 0, len(p.Unchanged))
	for _, u := range s.last.plan.Unchanged {
		if !slices.ContainsFunc(updates, func(w slicer.Slice) bool { return w.Name == u.Name }) {
			p.Unchanged = append(p.Unchanged, u)
		}
	}
	slices.SortFunc(updates, func(a, b slicer.Slice) int {
		if c := typeRank(a.AddressType) - typeRank(b.AddressType); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	p.Updates = updates
	p.Invalid = slicer.InvalidWrites(&p)
	return p
}

func typeRank(t slicer.AddressType) int {
	switch t {
	case slicer.IPv4:
		return 0
	case slicer.IPv6:
		return 1
	}
	return 2
}

// delta marks pods as seen and returns, as memo indexes, the pods that are
// not among the last no-op sync's (converted if new) and that sync's pods
// that are missing now. ok is false for a repeated pod or too many new
// ones.
func (s *Syncer) delta(svc *corev1.Service, pods []*corev1.Pod, nodes NodeGetter) (added, missing []int32, ok bool) {
	c := &s.conv
	c.index()
	c.podGen++
	types := slicer.AddressTypesFor(familyStrings(svc.Spec.IPFamilies), svc.Spec.ClusterIP)
	for _, pod := range pods {
		i, known := c.pods.get(pod)
		if known {
			m := &c.seen[i]
			if m.gen == c.podGen {
				return nil, nil, false // repeated
			}
			m.gen = c.podGen
			if m.base == s.base {
				continue
			}
		}
		if len(added) == maxDelta {
			return nil, nil, false
		}
		if !known {
			i = int32(len(c.memo))
			c.memo = append(c.memo, podMemo{})
			if err := c.convert(&c.memo[i], svc, pod, types, nodes, false, 1); err != nil {
				c.memo = c.memo[:i]
				return nil, nil, false
			}
			c.seen = append(c.seen, mark{gen: c.podGen})
			c.pods.put(pod, i)
		}
		added = append(added, i)
	}
	if len(added) == 0 {
		return nil, nil, true
	}
	for i := range c.seen {
		if c.seen[i].base == s.base && c.seen[i].gen != c.podGen {
			missing = append(missing, int32(i))
		}
	}
	return added, missing, len(missing) == len(added)
}

// change is a desired endpoint whose new version differs from the one the
// remembered no-op sync found in its slice.
type change struct {
	old, cur *slicer.Endpoint
	at       slicer.AddressType
	ports    []slicer.Port
}

// pair matches every added pod with a missing one of the same identity,
// port set and address types, and returns the endpoints that changed.
func (c *Converter) pair(added, missing []int32) ([]change, bool) {
	types := slicer.AddressTypesFor(familyStrings(c.svc.IPFamilies), c.svc.ClusterIP)
	var changes []change
	used := make([]bool, len(missing))
	for _, a := range added {
		ma := &c.memo[a]
		if ma.skip || ma.errs != nil {
			return nil, false
		}
		found := -1
		for j, b := range missing {
			mb := &c.memo[b]
			if used[j] || mb.skip || mb.errs != nil || !samePorts(ma.ports, mb.ports) || len(ma.eps) != len(mb.eps) {
				continue
			}
			same := true
			for ti := range ma.eps {
				if !sameIdentity(&ma.eps[ti], &mb.eps[ti]) {
					same = false
					break
				}
			}
			if same {
				found = j
				break
			}
		}
		if found < 0 {
			return nil, false
		}
		used[found] = true
		mb := &c.memo[missing[found]]
		for ti := range ma.eps {
			if ma.eps[ti].Addresses != nil && !sameEndpoint(&ma.eps[ti], &mb.eps[ti]) {
				changes = append(changes, change{old: &mb.eps[ti], cur: &ma.eps[ti], at: types[ti], ports: ma.ports})
			}
		}
	}
	return changes, true
}

// sameIdentity compares the identities of two endpoints as converted by
// Desired (addresses in the pod's order), both with or without addresses.
func sameIdentity(a, b *slicer.Endpoint) bool {
	return slices.Equal(a.Addresses, b.Addresses) && a.Hostname == b.Hostname &&
		a.TargetRef.Namespace == b.TargetRef.Namespace && a.TargetRef.Name == b.TargetRef.Name
}

// sameEndpoint compares every field that Desired sets.
func sameEndpoint(a, b *slicer.Endpoint) bool {
	return sameIdentity(a, b) && a.NodeName == b.NodeName && a.Zone == b.Zone && a.Conditions == b.Conditions &&
		a.TargetRef == b.TargetRef && a.Hints == nil && b.Hints == nil
}

// rewrite returns the slices holding the changed endpoints, each
// reconciled on its own with their new versions. ok is false when a slice
// holds an endpoint whose desired version cannot be told from the slice
// alone (hints, a resourceVersion, several addresses) or the slice is not
// found: the full path decides then.
func (s *Syncer) rewrite(facts slicer.Service, existing []*discovery.EndpointSlice, changes []change) ([]slicer.Slice, bool) {
	c := &s.conv
	// Where is each changed endpoint? One pass over the slices.
	at := make([]int, len(changes)) // index into existing
	pos := make([]int, len(changes))
	for k := range at {
		at[k] = -1
	}
	left := len(changes)
	for si := 0; si < len(existing) && left > 0; si++ {
		sl := &c.exist[existing[si]].slice
		for k, ch := range changes {
			if at[k] >= 0 || sl.AddressType != ch.at {
				continue
			}
			for ei := range sl.Endpoints {
				if e := &sl.Endpoints[ei]; e.TargetRef.Name == ch.old.TargetRef.Name && sameIdentity(e, ch.old) {
					at[k], pos[k] = si, ei
					left--
					break
				}
			}
		}
	}
	if left > 0 {
		return nil, false
	}
	if s.compact {
		// Compaction repacks the slices of a port set being rewritten
		// together; reconciling them one by one would not.
		for k := range at {
			if at[k] != at[0] {
				return nil, false
			}
		}
	}
	var updates []slicer.Slice
	for k := range changes {
		si := at[k]
		if si < 0 {
			continue // done with an earlier change in the same slice
		}
		sl := c.exist[existing[si]].slice
		if !samePortMultiset(sl.Ports, changes[k].ports) {
			return nil, false
		}
		eps := make([]slicer.Endpoint, len(sl.Endpoints))
		for ei := range sl.Endpoints {
			e := &sl.Endpoints[ei]
			if e.Hints != nil || len(e.Addresses) != 1 || e.TargetRef.ResourceVersion != "" ||
				e.TargetRef.APIVersion != "" || e.TargetRef.FieldPath != "" {
				return nil, false
			}
			eps[ei] = *e
		}
		for j := k; j < len(changes); j++ {
			if at[j] == si {
				eps[pos[j]] = *changes[j].cur
				at[j] = -1
			}
		}
		one := facts
		one.AddressTypes = []slicer.AddressType{sl.AddressType}
		p, err := s.core.Reconcile(one, []slicer.Group{{AddressType: sl.AddressType, Ports: sl.Ports, Endpoints: eps}},
			[]slicer.Slice{sl})
		if err != nil || len(p.Updates) != 1 || len(p.Creates) != 0 || len(p.Deletes) != 0 || p.Updates[0].Name != sl.Name {
			return nil, false
		}
		updates = append(updates, p.Updates[0])
	}
	return updates, true
}

// samePortMultiset reports whether a and b hold the same ports in any
// order.
func samePortMultiset(a, b []slicer.Port) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
	for _, p := range a {
		found := false
		for j, q := range b {
			if !used[j] && p == q {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
