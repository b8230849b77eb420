package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/record"

	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
)

// applier is what the EndpointSlice controller, the mirroring
// controller and the Writer share between a plan and the API server:
// the listing of their slices of an owner (list), the stale-informer
// guard (fresh) and its tracker, and the writes in upstream's order,
// recorded in the tracker and counted in the changes metric
// (sliceWriter). The front-ends differ in where the plan comes from
// (pods through a Syncer, an Endpoints object through slicer.Mirror, or
// the caller's groups); what only the Pod controller and the Writer
// need (hints, CoalesceWrites, the endpoint_slice_* metrics, the
// per-address-type writes) is serviceApplier.
type applier struct {
	client   clientset.Interface
	name     string // managed-by
	slices   discoverylisters.EndpointSliceLister
	changes  func(op string) // counts a successful write; nil: not counted
	recorder record.EventRecorder
	tracker  *sliceTracker
}

// newApplier returns an applier with a fresh tracker.
func newApplier(client clientset.Interface, name string, slices discoverylisters.EndpointSliceLister,
	changes func(op string), recorder record.EventRecorder) *applier {
	return &applier{client: client, name: name, slices: slices, changes: changes, recorder: recorder, tracker: newSliceTracker()}
}

// serviceApplier is the applier of the two front-ends that write a
// Service's slices from a slicer plan (the Pod controller and the
// Writer): topology hints on the plan, CoalesceWrites, the
// endpoint_slice_* metrics and the hint events (apply), and each
// address type's writes on their own (write).
type serviceApplier struct {
	*applier
	coalesce time.Duration // CoalesceWrites
	now      func() time.Time
	topoOpts topology.Options
	metrics  *controllerMetrics // nil: none
}

// newServiceApplier returns a serviceApplier with a fresh tracker and
// the wall clock, counting its writes in metrics' changes.
func newServiceApplier(client clientset.Interface, name string, slices discoverylisters.EndpointSliceLister, coalesce time.Duration,
	topoOpts topology.Options, metrics *controllerMetrics, recorder record.EventRecorder) *serviceApplier {
	var changes func(string)
	if metrics != nil {
		changes = metrics.change
	}
	return &serviceApplier{applier: newApplier(client, name, slices, changes, recorder),
		coalesce: coalesce, now: time.Now, topoOpts: topoOpts, metrics: metrics}
}

// list returns the applier's slices of the Service (or Endpoints) nn,
// by the service-name and managed-by labels, from the informer.
func (a *applier) list(nn types.NamespacedName) ([]*discovery.EndpointSlice, error) {
	return a.slices.EndpointSlices(nn.Namespace).List(labels.Set{
		discovery.LabelServiceName: nn.Name, discovery.LabelManagedBy: a.name,
	}.AsSelectorPreValidated())
}

// fresh returns an error wrapping ErrStaleInformer, naming the owner
// (what, nn), when the informer's slices of nn lag behind the applier's
// own writes (see sliceTracker.stale): planning from them could create
// duplicates or undo a write. It is the one stale check of all three
// front-ends.
func (a *applier) fresh(what string, nn types.NamespacedName, listed []*discovery.EndpointSlice) error {
	if a.tracker.stale(nn, listed) {
		return fmt.Errorf("%s %s: %w", what, nn, ErrStaleInformer)
	}
	return nil
}

// sliceWriter returns a writer for the slices of owner ("Service
// ns/name", "Endpoints ns/name"), through the applier's client, tracker
// and changes count.
func (a *applier) sliceWriter(owner string) sliceWriter {
	return sliceWriter{client: a.client, tracker: a.tracker, change: a.changes, owner: owner}
}

// writeOnePass sends a plan's objects as upstream's mirroring
// reconciler does: every address type in one pass, creates (none when
// creating is false: the Endpoints object is being deleted), updates,
// deletes, ending at the first failure.
func (a *applier) writeOnePass(ctx context.Context, owner, ns string, plan slicer.Plan, existing []*discovery.EndpointSlice, creating bool) error {
	creates, updates, deletes, err := Objects(plan, existing)
	if err != nil {
		return err
	}
	if !creating {
		creates = nil
	}
	return a.sliceWriter(owner).write(ctx, ns, creates, updates, deletes)
}

// writeState is what the applier keeps per Service between syncs; only
// the sync holding the Service touches it.
type writeState struct {
	hadHints bool
	// With CoalesceWrites: when the Service was last written, and the
	// earliest trigger time of the changes held back since (zero if none).
	lastWrite   time.Time
	heldTrigger time.Time
}

// applied is the outcome of apply: the hints results of each address
// type, or (held > 0) how long until the held writes may be made.
type applied struct {
	hints []topology.TypeResult
	held  time.Duration
}

// apply adds hints to plan by policy, then writes it (unless
// CoalesceWrites holds it back), records the metrics and the hint
// events. td is the Service's trafficDistribution ("" for none).
func (a *serviceApplier) apply(ctx context.Context, svc *corev1.Service, st *writeState, plan *slicer.Plan,
	existing []*discovery.EndpointSlice, trigger time.Time, policy topology.Policy, td string, capacity topology.Capacity) (applied, error) {
	opts := a.topoOpts
	opts.HadHints = st.hadHints
	results, hadHints := topology.HintPlan(capacity, plan, trigger, policy, opts)
	if wait := a.hold(st, plan.Writes(), trigger); wait > 0 {
		return applied{held: wait}, nil
	}
	st.hadHints = hadHints

	creates, updates, deletes, err := Objects(*plan, existing)
	if err != nil {
		return applied{hints: results}, err
	}
	written, writeErr := a.write(ctx, svc, plan.Types, creates, updates, deletes)

	topo, tdLabel := "Disabled", ""
	if policy == topology.PolicyAuto {
		topo = "Auto"
	} else if policy != topology.PolicyNone {
		tdLabel = td
	}
	a.metrics.planned(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, plan, written, topo, tdLabel)
	for _, r := range results {
		for _, ev := range r.Events {
			a.recorder.Event(svc, ev.Type, ev.Reason, ev.Message)
		}
	}
	return applied{hints: results}, writeErr
}

// hold reports, for a plan with the given number of writes, how long its
// writes are held back (see ControllerOptions.CoalesceWrites; 0: not
// held), and keeps st's account: the time of the last write, and the
// trigger time of the held changes.
func (a *serviceApplier) hold(st *writeState, writes int, trigger time.Time) time.Duration {
	if a.coalesce <= 0 {
		return 0
	}
	if writes == 0 {
		st.heldTrigger = time.Time{} // whatever was held has come undone
		return 0
	}
	now := a.now()
	if since := now.Sub(st.lastWrite); !st.lastWrite.IsZero() && since >= 0 && since < a.coalesce {
		st.heldTrigger = trigger
		return a.coalesce - since
	}
	st.lastWrite, st.heldTrigger = now, time.Time{}
	return 0
}

// earliest returns the earlier of two trigger times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// write sends the plan's objects as upstream's reconciler does: the
// writes of each address type of the Service (in the order of types),
// creates, updates and deletes, with a sliceWriter each, so that a
// failure ends the writes of its address type only; then the deletes of
// slices of address types the Service no longer has, each whatever the
// others' results. It returns the address types whose writes were all
// made (not one whose create the terminating namespace refused, which
// is no error) and the errors.
func (a *serviceApplier) write(ctx context.Context, svc *corev1.Service, types []slicer.TypeChurn,
	creates, updates, deletes []*discovery.EndpointSlice) (map[slicer.AddressType]bool, error) {
	w := a.sliceWriter("Service " + svc.Namespace + "/" + svc.Name)
	written := map[slicer.AddressType]bool{}
	var errs []error
	for _, t := range types {
		at := discovery.AddressType(t.AddressType)
		done, err := w.send(ctx, svc.Namespace, ofType(creates, at), ofType(updates, at), ofType(deletes, at))
		written[t.AddressType] = done
		if err != nil {
			errs = append(errs, err)
		}
	}
	var gone []*discovery.EndpointSlice // of address types the Service no longer has
	for _, s := range deletes {
		if _, ok := written[slicer.AddressType(s.AddressType)]; !ok {
			gone = append(gone, s)
		}
	}
	if err := w.deleteEach(ctx, svc.Namespace, gone); err != nil {
		errs = append(errs, err)
	}
	// A plan's creates and updates are all of the Service's address
	// types, which types lists; should one not be, it is still sent.
	untyped := func(list []*discovery.EndpointSlice) []*discovery.EndpointSlice {
		var out []*discovery.EndpointSlice
		for _, s := range list {
			if _, ok := written[slicer.AddressType(s.AddressType)]; !ok {
				out = append(out, s)
			}
		}
		return out
	}
	if c, u := untyped(creates), untyped(updates); len(c)+len(u) > 0 {
		if _, err := w.send(ctx, svc.Namespace, c, u, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return written, errors.Join(errs...)
}

// ofType returns the slices of list with address type at, in order.
func ofType(list []*discovery.EndpointSlice, at discovery.AddressType) []*discovery.EndpointSlice {
	var out []*discovery.EndpointSlice
	for _, s := range list {
		if s.AddressType == at {
			out = append(out, s)
		}
	}
	return out
}

// withoutDeleting drops slices with a deletion timestamp, which would
// otherwise hold a sync back until they are gone.
func withoutDeleting(in []*discovery.EndpointSlice) []*discovery.EndpointSlice {
	out := in[:0:0]
	for _, s := range in {
		if s.DeletionTimestamp == nil {
			out = append(out, s)
		}
	}
	return out
}

// checkControllerName checks a managed-by value as a label value.
func checkControllerName(name string) error {
	if err := validLabelValue(name); err != nil {
		return fmt.Errorf("endpointslice: ControllerName %q: %w", name, err)
	}
	return nil
}

// checkShared checks the options the EndpointSlice controller and the
// Writer have in common, returning every problem.
func checkShared(maxPerSlice int32, coalesce time.Duration, alloc topology.Allocator, hysteresis float64) []error {
	var errs []error
	if maxPerSlice < 1 || maxPerSlice > slicer.MaxEndpoints {
		errs = append(errs, fmt.Errorf("endpointslice: MaxEndpointsPerSlice %d: must be 1..%d", maxPerSlice, slicer.MaxEndpoints))
	}
	if coalesce < 0 {
		errs = append(errs, fmt.Errorf("endpointslice: CoalesceWrites %v: must not be negative", coalesce))
	}
	if alloc != topology.AllocatorUpstream && alloc != topology.AllocatorMinCrossZone {
		errs = append(errs, fmt.Errorf("endpointslice: Allocator %d: must be topology.AllocatorUpstream or topology.AllocatorMinCrossZone", alloc))
	}
	if !(hysteresis >= 0 && hysteresis <= maxHysteresis) { // NaN fails both
		errs = append(errs, fmt.Errorf("endpointslice: Hysteresis %v: must be 0..%v", hysteresis, maxHysteresis))
	}
	return errs
}
