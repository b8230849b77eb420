package slicer

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/fairslice/fairslice/internal/k8sname"
)

// Reconciler computes plans. It holds the validated options and scratch
// space reused between calls, so that a steady-state sync allocates
// almost nothing. A Reconciler is not safe for concurrent use; give each
// worker its own. The zero value is not usable: call NewReconciler.
type Reconciler struct {
	max        int
	controller string
	compact    bool
	seed       maphash.Seed

	// Scratch, reused between calls.
	table  []slot       // open addressing over the desired endpoints
	placed []bool       // desired endpoint already in a slice
	des    []*Endpoint  // desired endpoints of the current group
	keep   []int32      // desired indexes kept by the current slice
	rest   []int32      // desired indexes still to place
	ports  []Port       // port-set comparison scratch
	hashes []uint64     // identity hashes of the endpoints of the slice being pruned
	ahead  uintptr      // sum of the loads ahead (see loadAhead), kept so they are not optimized away
	order  []int32      // existing slices of one type, by name
	state  []sliceState // per existing slice
	groups []group      // logical desired groups of one type
}

// slot is an entry of the identity table: the high half of the identity
// hash and the desired index + 1 (0 is an empty slot). Keeping the hash in
// the slot saves a cache miss per probe on large Services.
type slot struct {
	tag uint32
	idx int32
}

// sliceState is what happens to an existing slice.
type sliceState uint8

const (
	stUnchanged sliceState = iota
	stUpdated
	stDeleted
	stOther // another address type
)

// group is a logical desired group: every input Group of one address type
// with one port set.
type group struct {
	ports   []Port  // canonical (sorted) ports
	members []int32 // indexes into desired
	slices  []int32 // existing slices (indexes) with this port set, by name
}

// NewReconciler validates opts and returns a Reconciler.
func NewReconciler(opts Options) (*Reconciler, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	r := &Reconciler{
		max:        opts.MaxEndpointsPerSlice,
		controller: opts.ControllerName,
		compact:    opts.Compact,
		seed:       maphash.MakeSeed(),
	}
	if r.max == 0 {
		r.max = DefaultMaxEndpointsPerSlice
	}
	if r.controller == "" {
		r.controller = DefaultControllerName
	}
	return r, nil
}

func (o Options) validate() error {
	var errs []error
	if o.MaxEndpointsPerSlice < 0 || o.MaxEndpointsPerSlice > MaxMaxEndpointsPerSlice {
		errs = append(errs, fmt.Errorf("slicer: Options.MaxEndpointsPerSlice: %d is out of range 1..%d (0 selects %d)",
			o.MaxEndpointsPerSlice, MaxMaxEndpointsPerSlice, DefaultMaxEndpointsPerSlice))
	}
	if o.ControllerName != "" && !k8sname.IsLabelValue(o.ControllerName) {
		errs = append(errs, fmt.Errorf("slicer: Options.ControllerName: %q is not a valid label value: %s",
			o.ControllerName, strings.Join(k8sname.LabelValue(o.ControllerName), "; ")))
	}
	return errors.Join(errs...)
}

// Reconcile is a one-shot NewReconciler(opts) followed by its Reconcile.
func Reconcile(svc Service, desired []Group, existing []Slice, opts Options) (Plan, error) {
	r, err := NewReconciler(opts)
	if err != nil {
		return Plan{}, err
	}
	return r.Reconcile(svc, desired, existing)
}

// Reconcile returns the plan that turns the existing slices of svc into
// slices holding the desired endpoints, as upstream's EndpointSlice
// reconciler would (see the package documentation for the algorithm and
// the deterministic order). existing are the slices labelled with the
// Service's name and this controller's name, whether owned or not.
//
// It does not modify its arguments; the plan shares unchanged data with
// them. Addresses are compared as strings and not checked for syntax
// (Validate does that). It fails, returning every problem found, on a Service without a
// name, unknown or repeated address types, a desired group of an address
// type the Service does not support, a desired endpoint without
// addresses, two desired endpoints of one group with the same identity,
// and existing slices without a name or with a repeated name.
//
// Cost: O(desired + existing endpoints) expected, plus O(k log k) to order
// the k endpoints that are new.
func (r *Reconciler) Reconcile(svc Service, desired []Group, existing []Slice) (Plan, error) {
	if err := r.check(&svc, desired, existing); err != nil {
		return Plan{}, err
	}
	plan := Plan{Unchanged: make([]Slice, 0, len(existing))}
	r.state = resize(r.state, len(existing))
	for i := range r.state {
		r.state[i] = stOther
	}
	nsr := nonReservedCount(svc.Labels)
	var late []Slice // deletes of unsupported address types
	for _, at := range canonicalTypes(svc.AddressTypes) {
		if err := r.reconcileType(&plan, &svc, nsr, at, desired, existing); err != nil {
			return Plan{}, err
		}
	}
	for i := range existing {
		if r.state[i] == stOther {
			late = append(late, existing[i])
		}
	}
	slices.SortFunc(late, byName)
	plan.Deletes = append(plan.Deletes, late...)
	plan.Invalid = InvalidWrites(&plan)
	return plan, nil
}

// InvalidWrites returns the slices plan creates and updates that fail
// Validate, in plan order, or nil. Reconcile fills Plan.Invalid with it.
func InvalidWrites(plan *Plan) []InvalidSlice {
	var out []InvalidSlice
	for _, list := range [][]Slice{plan.Creates, plan.Updates} {
		for i := range list {
			if errs := validate(&list[i]); errs != nil {
				s := &list[i]
				inv := InvalidSlice{Name: s.Name, GenerateName: s.GenerateName, AddressType: s.AddressType}
				for _, err := range errs {
					inv.Problems = append(inv.Problems, err.Error())
				}
				out = append(out, inv)
			}
		}
	}
	return out
}

// InvalidSlice is a slice of a plan that the API server would refuse.
type InvalidSlice struct {
	Name, GenerateName string // which slice (GenerateName for a create)
	AddressType        AddressType
	Problems           []string // what Validate reports, one problem each
}

// Error names the slice and its problems.
func (e InvalidSlice) Error() string {
	name := e.Name
	if name == "" {
		name = e.GenerateName + "*"
	}
	return fmt.Sprintf("slicer: slice %s (%s) would be refused: %s", name, e.AddressType, strings.Join(e.Problems, "; "))
}

// check validates the inputs, reporting every problem.
func (r *Reconciler) check(svc *Service, desired []Group, existing []Slice) error {
	var errs []error
	if svc.Name == "" {
		errs = append(errs, errors.New("slicer: Service.Name: must not be empty"))
	}
	if len(svc.AddressTypes) == 0 {
		// Every Service has one (AddressTypesFor); none would delete
		// every slice.
		errs = append(errs, errors.New("slicer: Service.AddressTypes: must not be empty"))
	}
	for i, t := range svc.AddressTypes {
		if t != IPv4 && t != IPv6 && t != FQDN {
			errs = append(errs, fmt.Errorf("slicer: Service.AddressTypes[%d]: unknown address type %q", i, t))
		} else if slices.Index(svc.AddressTypes, t) < i {
			errs = append(errs, fmt.Errorf("slicer: Service.AddressTypes[%d]: %q repeated", i, t))
		}
	}
	if o := svc.Owner; o != (OwnerRef{}) && (o.APIVersion == "" || o.Kind == "" || o.Name == "" || o.UID == "") {
		errs = append(errs, fmt.Errorf("slicer: Service.Owner %+v: APIVersion, Kind, Name and UID must all be set", o))
	}
	for i := range desired {
		g := &desired[i]
		if !slices.Contains(svc.AddressTypes, g.AddressType) {
			errs = append(errs, fmt.Errorf("slicer: desired[%d].AddressType: %q is not one of the Service's address types %v",
				i, g.AddressType, svc.AddressTypes))
		}
		for j := range g.Endpoints {
			if len(g.Endpoints[j].Addresses) == 0 {
				errs = append(errs, fmt.Errorf("slicer: desired[%d].Endpoints[%d].Addresses: must not be empty", i, j))
			}
		}
	}
	r.order = r.order[:0]
	for i := range existing {
		if existing[i].Name == "" {
			errs = append(errs, fmt.Errorf("slicer: existing[%d].Name: must not be empty", i))
			continue
		}
		r.order = append(r.order, int32(i))
	}
	slices.SortStableFunc(r.order, func(a, b int32) int { return cmp.Compare(existing[a].Name, existing[b].Name) })
	for k := 1; k < len(r.order); k++ {
		i, j := r.order[k], r.order[k-1]
		if existing[i].Name == existing[j].Name {
			errs = append(errs, fmt.Errorf("slicer: existing[%d].Name: %q repeats existing[%d]", i, existing[i].Name, j))
		}
	}
	return errors.Join(errs...)
}

// canonicalTypes returns ts in the order IPv4, IPv6, FQDN.
func canonicalTypes(ts []AddressType) []AddressType {
	out := make([]AddressType, 0, 3)
	for _, t := range [...]AddressType{IPv4, IPv6, FQDN} {
		if slices.Contains(ts, t) {
			out = append(out, t)
		}
	}
	return out
}

func byName(a, b Slice) int { return cmp.Compare(a.Name, b.Name) }

// typePlan collects the plan for one address type.
type typePlan struct {
	creates, updates, deletes []Slice
	dropped                   []Slice // creates left out: the Service is being deleted
	added, removed            int
}

// reconcileType reconciles the slices of one address type into plan: the
// steps of the package documentation's Model for each port set, then the
// placeholder, hint removal, recycling and the trigger time.
func (r *Reconciler) reconcileType(plan *Plan, svc *Service, nsr int, at AddressType, desired []Group, existing []Slice) error {
	r.existingOfType(at, existing)
	r.groupDesired(at, desired)
	var tp typePlan
	r.assignExisting(&tp, svc, existing)
	for gi := range r.groups {
		if err := r.pack(&tp, svc, nsr, at, &r.groups[gi], desired, existing); err != nil {
			return err
		}
	}
	r.placeholder(&tp, svc, at)
	if !svc.TopologyHints {
		r.removeHints(&tp, existing)
	}
	slices.SortFunc(tp.updates, byName)
	slices.SortFunc(tp.deletes, byName)
	recycle(&tp, svc)
	if svc.Deleting {
		tp.creates, tp.dropped = nil, tp.creates
	}
	r.finish(plan, &tp, svc, at, existing)
	return nil
}

// existingOfType lists the existing slices of type at in r.order, by
// name, and marks them unchanged until decided otherwise.
func (r *Reconciler) existingOfType(at AddressType, existing []Slice) {
	r.order = r.order[:0]
	for i := range existing {
		if existing[i].AddressType == at {
			r.order = append(r.order, int32(i))
			r.state[i] = stUnchanged
		}
	}
	slices.SortFunc(r.order, func(a, b int32) int { return cmp.Compare(existing[a].Name, existing[b].Name) })
}

// groupDesired merges the desired groups of type at into logical groups,
// one per port set, in the order the port sets first appear in desired.
// Upstream ranges over a Go map of port sets filled in pod order; with up
// to 8 entries such a map keeps them in insertion order and a range starts
// at a random one, so this order is one of upstream's. It matters for a
// Service being deleted, whose creates left after recycling are dropped:
// the ones recycled must be ones upstream can recycle.
func (r *Reconciler) groupDesired(at AddressType, desired []Group) {
	r.groups = r.groups[:0]
	for i := range desired {
		if desired[i].AddressType != at {
			continue
		}
		gi := r.findGroup(desired[i].Ports)
		if gi < 0 {
			p := slices.Clone(desired[i].Ports)
			if p == nil {
				p = []Port{}
			}
			slices.SortFunc(p, comparePorts)
			r.groups = append(r.groups, group{ports: p})
			gi = len(r.groups) - 1
		}
		r.groups[gi].members = append(r.groups[gi].members, int32(i))
	}
}

// assignExisting gives each existing slice of the type to the group of its
// port set; slices not owned by the Service, and slices of a port set no
// longer desired, are deleted.
func (r *Reconciler) assignExisting(tp *typePlan, svc *Service, existing []Slice) {
	for _, si := range r.order {
		s := &existing[si]
		if ownedBy(s, svc) {
			if gi := r.findGroup(s.Ports); gi >= 0 {
				r.groups[gi].slices = append(r.groups[gi].slices, si)
				continue
			}
		}
		r.state[si] = stDeleted
		tp.deletes = append(tp.deletes, *s)
	}
}

// placeholder gives a Service with no slice of the type left one empty
// slice; an existing one that matches is kept.
func (r *Reconciler) placeholder(tp *typePlan, svc *Service, at AddressType) {
	if len(r.order) != len(tp.deletes) || len(tp.creates) != 0 {
		return
	}
	ph := r.newSlice(svc, at, []Port{}, 0)
	if len(tp.deletes) == 1 && placeholderEqual(&tp.deletes[0], &ph, svc) {
		for _, si := range r.order {
			r.state[si] = stUnchanged
		}
		tp.deletes = tp.deletes[:0]
		return
	}
	tp.creates = append(tp.creates, ph)
}

// removeHints clears hints on the slices being written and rewrites the
// unchanged slices that carry any.
func (r *Reconciler) removeHints(tp *typePlan, existing []Slice) {
	for i := range tp.creates {
		clearHints(tp.creates[i].Endpoints)
	}
	for i := range tp.updates {
		clearHints(tp.updates[i].Endpoints)
	}
	for _, si := range r.order {
		if r.state[si] != stUnchanged || !hasHints(existing[si].Endpoints) {
			continue
		}
		u := existing[si]
		u.Endpoints = slices.Clone(u.Endpoints)
		clearHints(u.Endpoints)
		r.state[si] = stUpdated
		tp.updates = append(tp.updates, u)
	}
}

// recycle turns creates into updates of owned slices being deleted: the
// last create takes the name of the first such delete, and so on, as
// upstream (this matters when the Service is being deleted: the creates
// left over are dropped).
func recycle(tp *typePlan, svc *Service) {
	for i := 0; i < len(tp.deletes) && len(tp.creates) > 0; {
		d := &tp.deletes[i]
		if !ownedBy(d, svc) {
			i++
			continue
		}
		c := tp.creates[len(tp.creates)-1]
		tp.creates = tp.creates[:len(tp.creates)-1]
		c.Name = d.Name
		tp.updates = append(tp.updates, c)
		tp.deletes = slices.Delete(tp.deletes, i, i+1)
	}
}

// finish sets the trigger time on the slices written and appends the
// type's plan, and its churn, to plan.
func (r *Reconciler) finish(plan *Plan, tp *typePlan, svc *Service, at AddressType, existing []Slice) {
	for i := range tp.creates {
		tp.creates[i].Annotations = withTriggerTime(tp.creates[i].Annotations, svc.TriggerTime)
	}
	for i := range tp.updates {
		tp.updates[i].Annotations = withTriggerTime(tp.updates[i].Annotations, svc.TriggerTime)
	}
	plan.Creates = append(plan.Creates, tp.creates...)
	plan.Updates = append(plan.Updates, tp.updates...)
	plan.Deletes = append(plan.Deletes, tp.deletes...)
	plan.Dropped = append(plan.Dropped, tp.dropped...)
	plan.Added += tp.added
	plan.Removed += tp.removed
	plan.Types = append(plan.Types, TypeChurn{AddressType: at, Added: tp.added, Removed: tp.removed})
	for _, si := range r.order {
		if r.state[si] == stUnchanged {
			plan.Unchanged = append(plan.Unchanged, existing[si])
		}
	}
}

// findGroup returns the index of the logical group with the port set of
// ports, or -1.
func (r *Reconciler) findGroup(ports []Port) int {
	for i := range r.groups {
		if samePortSet(ports, r.groups[i].ports, &r.ports) {
			return i
		}
	}
	return -1
}

// work is a slice being rewritten or created.
type work struct {
	s   Slice
	src int32 // index of the existing slice, -1 for a new one
}

// packing is the state of one port set's reconciliation.
type packing struct {
	svc       *Service
	nsr       int // the Service's non-reserved labels
	at        AddressType
	g         *group
	existing  []Slice
	updates   []work  // slices being rewritten
	unchanged []int32 // existing slices left as they are, by name
	moved     []Endpoint
	next      int // next index of r.rest to place
}

// pack reconciles one port set, in the steps of the package
// documentation's Model: prune and refresh the existing slices, fill the
// ones being rewritten, then place the rest in full new slices and the
// remainder where it fits best.
func (r *Reconciler) pack(tp *typePlan, svc *Service, nsr int, at AddressType, g *group, desired []Group, existing []Slice) error {
	if err := r.indexDesired(at, g, desired); err != nil {
		return err
	}
	p := &packing{svc: svc, nsr: nsr, at: at, g: g, existing: existing}
	r.prune(tp, p)
	r.pending()
	if r.compact {
		r.compactUpdates(tp, p)
	}
	r.fill(p)
	r.placeRest(tp, p)
	for _, w := range p.updates {
		r.state[w.src] = stUpdated
		tp.updates = append(tp.updates, w.s)
	}
	return nil
}

// indexDesired builds the identity table over the desired endpoints of g.
func (r *Reconciler) indexDesired(at AddressType, g *group, desired []Group) error {
	r.des = r.des[:0]
	for _, m := range g.members {
		for j := range desired[m].Endpoints {
			r.des = append(r.des, &desired[m].Endpoints[j])
		}
	}
	n := len(r.des)
	r.placed = resize(r.placed, n)
	clear(r.placed)
	size := 8
	for size < 2*n {
		size <<= 1
	}
	r.table = resize(r.table, size)
	clear(r.table)
	mask := uint64(size - 1)
	for i, e := range r.des {
		h := identityHash(r.seed, e)
		tag := uint32(h >> 32)
		j := h & mask
		for ; r.table[j].idx != 0; j = (j + 1) & mask {
			if k := r.table[j].idx - 1; r.table[j].tag == tag && sameIdentity(r.des[k], e) {
				return fmt.Errorf("slicer: desired endpoint %s appears twice in the %s group with ports %v",
					describe(e), at, g.ports)
			}
		}
		r.table[j] = slot{tag: tag, idx: int32(i + 1)}
	}
	return nil
}

// prune is step 1: each existing slice of the port set, in name order,
// keeps the endpoints still desired (their desired version) and drops the
// rest. A slice that lost an endpoint or holds a changed one is rewritten,
// or deleted if nothing is left; one whose non-reserved labels differ is
// rewritten; any other is unchanged.
func (r *Reconciler) prune(tp *typePlan, p *packing) {
	remaining := len(r.des)
	for _, si := range p.g.slices {
		s := &p.existing[si]
		r.keep = r.keep[:0]
		changed := false
		r.loadAhead(s.Endpoints)
		for k := range s.Endpoints {
			e := &s.Endpoints[k]
			idx := r.lookup(e, r.hashes[k])
			if idx < 0 {
				changed = true
				continue
			}
			r.placed[idx] = true
			remaining--
			r.keep = append(r.keep, idx)
			if !changed && !equalBeyondIdentity(r.des[idx], e) {
				changed = true
			}
		}
		switch {
		case changed:
			tp.removed += len(s.Endpoints) - len(r.keep)
			if len(r.keep) == 0 {
				r.state[si] = stDeleted
				tp.deletes = append(tp.deletes, *s)
				continue
			}
			u := *s
			u.Endpoints = make([]Endpoint, len(r.keep), max(len(r.keep), r.max))
			for k, idx := range r.keep {
				u.Endpoints[k] = *r.des[idx]
			}
			u.Labels = r.labels(p.svc)
			p.updates = append(p.updates, work{s: u, src: si})
		case labelsDiffer(s.Labels, p.svc.Labels, p.nsr):
			u := *s
			u.Endpoints = slices.Clone(s.Endpoints)
			u.Labels = r.labels(p.svc)
			p.updates = append(p.updates, work{s: u, src: si})
		default:
			p.unchanged = append(p.unchanged, si)
		}
	}
	tp.added += remaining
}

// pending lists in r.rest the desired endpoints not yet in a slice, in
// identity order.
func (r *Reconciler) pending() {
	r.rest = r.rest[:0]
	for i := range r.des {
		if !r.placed[i] {
			r.rest = append(r.rest, int32(i))
		}
	}
	if len(r.rest) > 1 {
		slices.SortFunc(r.rest, func(a, b int32) int { return compareIdentity(r.des[a], r.des[b]) })
	}
}

// fullestFirst orders slices being written by length, longest first, then
// by name.
func fullestFirst(a, b work) int {
	if c := cmp.Compare(len(b.s.Endpoints), len(a.s.Endpoints)); c != 0 {
		return c
	}
	return cmp.Compare(a.s.Name, b.s.Name)
}

// compactUpdates is Options.Compact: when the slices being rewritten could
// hold their endpoints and the new ones in fewer slices, the sparsest of
// them are deleted instead of rewritten (one write each either way) and
// their endpoints move to the others.
func (r *Reconciler) compactUpdates(tp *typePlan, p *packing) {
	if len(p.updates) < 2 {
		return
	}
	total := len(r.rest)
	for _, w := range p.updates {
		total += len(w.s.Endpoints)
	}
	k := (total + r.max - 1) / r.max
	if k >= len(p.updates) {
		return
	}
	slices.SortStableFunc(p.updates, fullestFirst)
	for _, w := range p.updates[k:] {
		p.moved = append(p.moved, w.s.Endpoints...)
		r.state[w.src] = stDeleted
		tp.deletes = append(tp.deletes, p.existing[w.src])
	}
	p.updates = p.updates[:k]
}

// take fills w up to the maximum, with moved endpoints first, then the
// pending ones.
func (r *Reconciler) take(p *packing, w *work) {
	for len(p.moved) > 0 && len(w.s.Endpoints) < r.max {
		w.s.Endpoints = append(w.s.Endpoints, p.moved[0])
		p.moved = p.moved[1:]
	}
	for p.next < len(r.rest) && len(w.s.Endpoints) < r.max {
		w.s.Endpoints = append(w.s.Endpoints, *r.des[r.rest[p.next]])
		p.next++
	}
}

// fill is step 2: the pending endpoints fill the slices being rewritten,
// fullest first (ties by name).
func (r *Reconciler) fill(p *packing) {
	if len(r.rest) == 0 && len(p.moved) == 0 || len(p.updates) == 0 {
		return
	}
	slices.SortStableFunc(p.updates, fullestFirst)
	for i := range p.updates {
		r.take(p, &p.updates[i])
	}
}

// placeRest is step 3: the endpoints still pending go into full new
// slices; a remainder smaller than a slice goes whole into the unchanged
// slice it fills best, or else into one more new slice.
func (r *Reconciler) placeRest(tp *typePlan, p *packing) {
	for p.next < len(r.rest) {
		left := len(r.rest) - p.next
		var w work
		best := -1
		if left < r.max {
			best = r.bestFit(p, left)
		}
		if best >= 0 {
			si := p.unchanged[best]
			p.unchanged = slices.Delete(p.unchanged, best, best+1)
			w = work{s: p.existing[si], src: si}
			w.s.Endpoints = slices.Grow(slices.Clone(w.s.Endpoints), left)
		} else {
			w = work{s: r.newSlice(p.svc, p.at, p.g.ports, min(left, r.max)), src: -1}
		}
		r.take(p, &w)
		if w.src < 0 {
			tp.creates = append(tp.creates, w.s)
		} else {
			p.updates = append(p.updates, w)
		}
	}
}

// bestFit returns the index in p.unchanged of the slice that left more
// endpoints fill best (the least room left over), or -1 if none has room.
// Among equally good slices it prefers one that hint removal would
// rewrite anyway (upstream picks at random, so its count of updates
// varies there), then the smaller name.
func (r *Reconciler) bestFit(p *packing, left int) int {
	best, gap, bestHinted := -1, r.max, false
	for i, si := range p.unchanged {
		d := r.max - (len(p.existing[si].Endpoints) + left)
		if d < 0 || d > gap {
			continue
		}
		hinted := !p.svc.TopologyHints && hasHints(p.existing[si].Endpoints)
		if d < gap || hinted && !bestHinted {
			gap, best, bestHinted = d, i, hinted
		}
	}
	return best
}

// loadAhead hashes the identities of eps, an existing slice's endpoints,
// into r.hashes, and loads what looking them up will read of the desired
// endpoints they likely match: their table slots, the endpoints, and
// their addresses' and target's strings. The desired endpoints lie all
// over memory, in the order of the pods; each stage's loads are
// independent of each other, so the processor overlaps their cache
// misses instead of waiting for one after the other in lookup and the
// comparisons.
func (r *Reconciler) loadAhead(eps []Endpoint) {
	r.hashes = resize(r.hashes, len(eps))
	mask := uint64(len(r.table) - 1)
	var sum uintptr
	for k := range eps {
		h := identityHash(r.seed, &eps[k])
		r.hashes[k] = h
		sum += uintptr(r.table[h&mask].idx)
	}
	for _, h := range r.hashes {
		if i := r.table[h&mask].idx; i != 0 {
			d := r.des[i-1]
			// A word in each cache line of the 200-byte endpoint that the
			// comparisons read.
			sum += uintptr(len(d.Addresses)) + uintptr(len(d.NodeName)) + uintptr(d.Conditions.Ready) +
				uintptr(len(d.TargetRef.UID)) + uintptr(len(d.TargetRef.FieldPath))
		}
	}
	for _, h := range r.hashes {
		if i := r.table[h&mask].idx; i != 0 {
			d := r.des[i-1]
			if len(d.Addresses) > 0 {
				sum += firstByte(d.Addresses[0])
			}
			sum += firstByte(d.TargetRef.Name) + firstByte(d.TargetRef.UID)
		}
	}
	r.ahead += sum
}

// firstByte loads the first byte of s, or nothing if s is empty.
func firstByte(s string) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(s[0])
}

// lookup returns the index of the desired endpoint with e's identity, whose
// identity hash is h, or -1 if there is none or it is already placed.
func (r *Reconciler) lookup(e *Endpoint, h uint64) int32 {
	tag := uint32(h >> 32)
	mask := uint64(len(r.table) - 1)
	for j := h & mask; r.table[j].idx != 0; j = (j + 1) & mask {
		if k := r.table[j].idx - 1; r.table[j].tag == tag && sameIdentity(r.des[k], e) {
			if r.placed[k] {
				return -1
			}
			return k
		}
	}
	return -1
}

// newSlice returns a slice to create for svc, with room for n endpoints.
func (r *Reconciler) newSlice(svc *Service, at AddressType, ports []Port, n int) Slice {
	return Slice{
		GenerateName: GenerateName(svc.Name),
		Namespace:    svc.Namespace,
		AddressType:  at,
		Ports:        ports,
		Endpoints:    make([]Endpoint, 0, n),
		Labels:       r.labels(svc),
		Owners:       []OwnerRef{ownerOf(svc)},
	}
}

// ownerOf returns the owner reference of svc's slices (Service.Owner).
func ownerOf(svc *Service) OwnerRef {
	if svc.Owner != (OwnerRef{}) {
		return svc.Owner
	}
	return OwnerRef{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID, Controller: true, BlockOwnerDeletion: true}
}

// ownedBy reports whether s has an owner reference to svc's owner.
func ownedBy(s *Slice, svc *Service) bool {
	want := ownerOf(svc)
	for _, o := range s.Owners {
		if o.UID == want.UID && o.Kind == want.Kind && o.APIVersion == want.APIVersion {
			return true
		}
	}
	return false
}

// placeholderEqual compares an existing slice with a placeholder as
// upstream does: namespace (empty is the Service's), labels both ways, the
// address type, and no ports and no endpoints.
func placeholderEqual(s, ph *Slice, svc *Service) bool {
	ns := s.Namespace
	if ns == "" {
		ns = svc.Namespace
	}
	if ns != ph.Namespace || s.AddressType != ph.AddressType || len(s.Ports) != 0 || len(s.Endpoints) != 0 {
		return false
	}
	// A missing label reads as "", as in upstream's comparison: a slice
	// without the headless label ("") still matches.
	for k, v := range ph.Labels {
		if s.Labels[k] != v {
			return false
		}
	}
	for k, v := range s.Labels {
		if ph.Labels[k] != v {
			return false
		}
	}
	return true
}

func hasHints(eps []Endpoint) bool {
	for i := range eps {
		if eps[i].Hints != nil {
			return true
		}
	}
	return false
}

func clearHints(eps []Endpoint) {
	for i := range eps {
		eps[i].Hints = nil
	}
}

// withTriggerTime returns annotations with the trigger-time annotation set
// to t, or removed if t is zero, without modifying the argument.
func withTriggerTime(annotations map[string]string, t time.Time) map[string]string {
	out := make(map[string]string, len(annotations)+1)
	for k, v := range annotations {
		out[k] = v
	}
	if t.IsZero() {
		delete(out, AnnotationTriggerTime)
	} else {
		out[AnnotationTriggerTime] = t.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func describe(e *Endpoint) string {
	s := fmt.Sprintf("%v", e.Addresses)
	if e.TargetRef.Name != "" {
		s += fmt.Sprintf(" (%s/%s)", e.TargetRef.Namespace, e.TargetRef.Name)
	}
	return s
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
