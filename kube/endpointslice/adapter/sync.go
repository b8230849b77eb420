package adapter

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/fairslice/fairslice/slicer"
)

// Syncer is one worker's whole reconciliation of Services: a Converter, a
// slicer.Reconciler, and the memory of the last sync that had nothing to
// write. Not safe for concurrent use; give each worker its own. Create it
// with NewSyncer.
//
// A no-op sync is the common case of a controller (periodic resyncs, pod
// updates that change nothing the slices hold), and under the informer
// contract (a cached object is replaced, never modified in place; see
// Converter) it can be recognised without looking inside any object: when
// the Service facts are equal (the trigger time aside: a plan without
// writes does not use it), the Service spec and the zones of the nodes the
// pods saw are the same, the pods are the same set of objects and the
// existing slices are the same set of objects as in the remembered no-op
// sync, then the plan is again to write nothing, with the same slices
// unchanged. Plan checks exactly this, at the cost of one index lookup per
// pod and one map lookup per slice. When a few pods were replaced by
// objects of the same identity (see Plan), only the slices holding them
// are reconciled; anything else runs the Converter and the slicer in
// full. The remembered verdict is never trusted for an object it was not
// computed from: a replaced pod is converted and compared.
//
// A Syncer (like a Converter) remembers one Service: syncing another one
// forgets everything. A controller whose workers take Services from a
// shared queue keeps one Syncer per Service (for example in a map by
// namespace and name, dropped when the Service is deleted) and serialises
// its use, as the workqueue already does per key.
type Syncer struct {
	conv    Converter
	core    *slicer.Reconciler
	compact bool // Options.Compact: slices are repacked together
	last    noOp
	base    uint32 // id of the pods of the last no-op sync (mark.base)
	hits    int    // syncs answered from the remembered no-op, for tests
	incrs   int    // syncs planned from the remembered no-op and a few changed pods, for tests
}

// noOp remembers the last sync that planned no writes.
type noOp struct {
	valid  bool
	facts  slicer.Service
	epoch  uint32 // Converter.epoch then: spec and node zones unchanged since
	pods   int    // number of pods
	slices int    // number of existing slices
	plan   slicer.Plan
}

// NewSyncer returns a Syncer whose reconciler has the given options.
func NewSyncer(opts slicer.Options) (*Syncer, error) {
	core, err := slicer.NewReconciler(opts)
	if err != nil {
		return nil, err
	}
	return &Syncer{core: core, compact: opts.Compact}, nil
}

// Plan returns the plan for svc, as
//
//	desired, skipped := conv.Desired(svc, pods, nodes)
//	existingSlices, _ := conv.Existing(existing)
//	plan, err := core.Reconcile(facts, desired, existingSlices)
//
// would, where facts are the slicer facts about svc (ServiceFacts, plus
// TopologyHints if a later pass manages hints). skipped reports the pods
// left out (see Converter.Desired), in which case plan still holds
// everything else; err is a failure with no plan (a node lookup error, a
// nil argument, or bad input to the reconciler). The plan shares data with
// the objects and with Syncer's memory: treat it as read-only
// (Plan.MoveToUpdates copies what it changes).
//
// After a sync that planned no writes, a sync of the same facts, Service
// spec, node zones and slice objects in which at most a few pods were
// replaced by objects of the same identity (the common pod update: a
// readiness flip, a label change) is planned from that memory: only the
// slices holding the replaced pods' endpoints are reconciled. The result
// is the plan the full path gives; anything else takes the full path.
func (s *Syncer) Plan(facts slicer.Service, svc *corev1.Service, pods []*corev1.Pod, nodes NodeGetter,
	existing []*discovery.EndpointSlice) (plan slicer.Plan, skipped, err error) {
	if plan, ok := s.fromMemory(facts, svc, pods, nodes, existing); ok {
		return plan, nil, nil
	}
	s.last.valid = false
	desired, skippedPods, err := s.conv.desired(svc, pods, nodes)
	if err != nil {
		return slicer.Plan{}, nil, err
	}
	if skippedPods != nil {
		skipped = skippedPods
	}
	conv, err := s.conv.existing(existing)
	if err != nil {
		return slicer.Plan{}, nil, err
	}
	plan, err = s.core.Reconcile(facts, desired, conv)
	if err != nil {
		return slicer.Plan{}, skipped, err
	}
	if skipped == nil && plan.Writes() == 0 {
		s.last = noOp{
			valid: true, facts: facts, epoch: s.conv.epoch, pods: len(pods), slices: len(existing),
			plan: slicer.Plan{Unchanged: slices.Clone(plan.Unchanged), Added: plan.Added, Removed: plan.Removed,
				Types: slices.Clone(plan.Types), Dropped: slices.Clone(plan.Dropped)},
		}
		s.base++
		for i := range s.conv.seen { // as long as memo, or memo is still to be written out
			if s.conv.seen[i].gen == s.conv.podGen {
				s.conv.seen[i].base = s.base
			}
		}
	}
	return plan, skipped, nil
}

// sameFacts compares two sets of Service facts, except the trigger time:
// a plan with no writes does not depend on it (it only annotates written
// slices), and a plan made from memory uses the current one.
func sameFacts(a, b *slicer.Service) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name && a.UID == b.UID && maps.Equal(a.Labels, b.Labels) &&
		slices.Equal(a.AddressTypes, b.AddressTypes) && a.Headless == b.Headless &&
		a.PublishNotReadyAddresses == b.PublishNotReadyAddresses && a.Deleting == b.Deleting &&
		a.TopologyHints == b.TopologyHints && a.Owner == b.Owner
}

// sameSlices reports whether in are, as a set without repeats, the slices
// of the last Existing call (the caller checks that the counts match). It
// marks them as seen now, as Existing does.
func (c *Converter) sameSlices(in []*discovery.EndpointSlice) bool {
	prev := c.gen
	c.gen++
	for _, s := range in {
		m := c.exist[s]
		if m == nil || m.gen != prev {
			return false
		}
		m.gen = c.gen
	}
	return true
}
