package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
)

// writerSubsystem is the subsystem of a Writer's metrics:
// endpoint_slice_writer_<name>, with the names of upstream's
// endpoint_slice_controller_* metrics.
const writerSubsystem = "endpoint_slice_writer"

// WriterOptions configure NewWriter. Only ControllerName is required;
// the zero value of every other field is upstream's behaviour (100
// endpoints per slice, the Service as owner, upstream's hint allocation,
// every sync written at once) with no metrics and no events.
type WriterOptions struct {
	// ControllerName is the managed-by label value of the slices the
	// Writer owns (endpointslice.kubernetes.io/managed-by). Required: a
	// valid label value other than kube-controller-manager's
	// ControllerName and MirroringControllerName, whose slices those
	// controllers would delete or rewrite. Writers with different names
	// never touch each other's slices.
	ControllerName string
	// MaxEndpointsPerSlice is 1..1000; 0 means 100.
	MaxEndpointsPerSlice int32
	// Owner returns the owner of a Service's slices, in the Service's
	// namespace (a ServiceImport, say); nil means the Service itself, as
	// upstream. A slice of the Writer's not owned by it is deleted, as
	// upstream deletes slices the Service does not own.
	Owner func(service *corev1.Service) (SliceOwner, error)
	// Compact is slicer.Options.Compact.
	Compact bool
	// FQDN makes the Writer write slices of address type FQDN, whatever
	// the Service's IP families: Sync then takes FQDN groups only (a
	// Service without endpoints gets one empty FQDN slice). Without it,
	// Sync takes the Service's IP address types only. kube-proxy ignores
	// FQDN slices; they serve consumers that resolve names themselves.
	FQDN bool
	// AllowSelector lets Sync write the slices of a Service that has a
	// selector. Without it such a Service is refused: kube-controller-manager's
	// EndpointSlice controller publishes its pods' endpoints, and clients
	// would see both sets. Set it only when the caller owns those
	// endpoints (kube-controller-manager runs without that controller,
	// say).
	AllowSelector bool
	// AllowUndeclaredPortNames lets Sync write endpoint ports whose name
	// is not the name of one of the Service's ports. Without it they are
	// refused: clients that look a Service's port up by name (kube-proxy,
	// DNS SRV records) never find such a port.
	AllowUndeclaredPortNames bool
	// Nodes give the zones' capacity for Services with Auto topology
	// hints (service.kubernetes.io/topology-mode: Auto), read at each
	// sync of such a Service; nil: those Services get no hints, as with
	// insufficient capacity. trafficDistribution hints (PreferClose,
	// PreferSameZone, PreferSameNode) need no nodes: they come from the
	// endpoints' Zone and NodeName.
	Nodes corelisters.NodeLister
	// Allocator and Hysteresis are as in ControllerOptions.
	Allocator  topology.Allocator
	Hysteresis float64
	// CoalesceWrites, when positive, is the least time between two
	// syncs of a Service that write: a Sync with writes to make sooner
	// holds them back and returns a *HeldError saying when to sync
	// again; that sync then writes every change since (see
	// ControllerOptions.CoalesceWrites). A held sync counts as a
	// successful one in endpoint_slice_writer_syncs, as in the
	// controller. Zero writes every sync at once.
	CoalesceWrites time.Duration
	// Requeue, if set, is called with a Service's key ("namespace/name")
	// when the informer shows that someone else added, changed or
	// deleted one of the Writer's slices of it, as the EndpointSlice
	// controller queues the Service then; sync it again to repair them.
	Requeue func(key string)
	// Registerer receives the endpoint_slice_writer_* metrics (upstream's
	// endpoint_slice_controller_* names, help and buckets under this
	// subsystem, with a const label managed_by=ControllerName, so that
	// several Writers share a registry); nil records none.
	Registerer prometheus.Registerer
	// EventRecorder records the Writer's events on the Services
	// (FailedToUpdateEndpointSlices, the topology hints events); nil
	// records none.
	EventRecorder record.EventRecorder
}

// SliceOwner is the owner reference of a Service's slices when it is
// not the Service (WriterOptions.Owner): an object of the Service's
// namespace. The slices reference it as their controller, without
// blockOwnerDeletion (which would need the right to set finalizers on
// it), so they are garbage-collected with it.
type SliceOwner struct {
	GroupVersionKind schema.GroupVersionKind
	Name             string
	UID              types.UID
}

// HeldError is returned by Sync when WriterOptions.CoalesceWrites held
// the Service's writes back: nothing was written, and a Sync after
// RetryAfter writes every change since.
type HeldError struct {
	RetryAfter time.Duration
}

// Error says how long the writes are held.
func (e *HeldError) Error() string {
	return fmt.Sprintf("endpointslice: writes held back for %v (CoalesceWrites)", e.RetryAfter)
}

// Writer keeps the EndpointSlices of Services in line with endpoints
// the caller computes, for endpoint sources that are not Pods (virtual
// machines, other clusters, a mesh's registry): the caller says what a
// Service's endpoints are (Sync, with GroupsFrom to build the groups),
// and the Writer plans with package slicer and writes as the
// EndpointSlice controller does, through the same code: slices of at
// most MaxEndpointsPerSlice endpoints, rewritten only where endpoints
// changed, each address type written on its own (creates, updates,
// deletes), the last-change-trigger-time annotation (the time of the
// Sync that wrote, or of the first held one), topology hints by the
// Service's annotation and trafficDistribution, and the stale-informer
// guard.
//
// It writes only slices labelled with its ControllerName and the
// Service's name, found through the EndpointSlice informer; slices of
// other managers (kube-controller-manager's, the mirroring
// controller's, another Writer's) are never read, changed or deleted.
// A Sync whose informer has not yet seen the Writer's own last writes
// for the Service returns an error wrapping ErrStaleInformer and writes
// nothing, so a stale cache never creates duplicate slices; sync the
// Service again after a backoff (a rate-limited work queue does this).
// The guard tells the Writer's writes apart by what the API server sets
// on every write: a UID on each created slice and a generation bumped by
// each change of its content. A client-go fake clientset sets neither
// (nor a name from generateName); in tests call
// endpointslicetest.ActAsAPIServer on it, and a write that comes back
// without a UID or generation fails the Sync with an error saying so.
//
// The Writer starts no goroutine and has no Run: the caller's workers
// call Sync and Delete, and the informer must be started and synced by
// the caller. Safe for concurrent use; Syncs and Deletes of one Service
// take turns.
type Writer struct {
	*serviceApplier
	max      int
	compact  bool
	checks   syncChecks
	owner    func(*corev1.Service) (SliceOwner, error)
	nodes    corelisters.NodeLister
	mu       sync.Mutex
	services map[string]*writerState
}

// writerState is what a Writer keeps per Service.
type writerState struct {
	mu   sync.Mutex // held by the Sync or Delete of the Service
	core *slicer.Reconciler
	conv Converter
	writeState
}

// refusedControllerNames are the managed-by values of
// kube-controller-manager's controllers.
var refusedControllerNames = []string{ControllerName, MirroringControllerName}

// NewWriter returns a Writer that writes through client and reads the
// existing slices from endpointSliceInformer, on which it registers an
// event handler (for the stale-informer guard and Requeue). It fails,
// naming every invalid option and its value, on a missing or invalid
// ControllerName or one of kube-controller-manager's, an invalid
// MaxEndpointsPerSlice, Allocator or Hysteresis, or a negative
// CoalesceWrites; and when the metrics cannot be registered.
func NewWriter(client clientset.Interface, endpointSliceInformer discoveryinformers.EndpointSliceInformer, opts WriterOptions) (*Writer, error) {
	if opts.MaxEndpointsPerSlice == 0 {
		opts.MaxEndpointsPerSlice = slicer.DefaultMaxEndpointsPerSlice
	}
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("endpointslice: NewWriter: client is nil"))
	}
	if endpointSliceInformer == nil {
		errs = append(errs, errors.New("endpointslice: NewWriter: endpointSliceInformer is nil"))
	}
	switch name := opts.ControllerName; {
	case name == "":
		errs = append(errs, errors.New(`endpointslice: ControllerName "": required`))
	case name == ControllerName || name == MirroringControllerName:
		errs = append(errs, fmt.Errorf("endpointslice: ControllerName %q: is kube-controller-manager's; must not be one of %q", name, refusedControllerNames))
	default:
		if err := checkControllerName(name); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, checkShared(opts.MaxEndpointsPerSlice, opts.CoalesceWrites, opts.Allocator, opts.Hysteresis)...)
	if errs != nil {
		return nil, errors.Join(errs...)
	}
	m, err := newControllerMetrics(opts.Registerer, writerSubsystem, prometheus.Labels{"managed_by": opts.ControllerName}, int(opts.MaxEndpointsPerSlice))
	if err != nil {
		return nil, err
	}
	recorder := opts.EventRecorder
	if recorder == nil {
		recorder = noEvents{}
	}
	w := &Writer{
		serviceApplier: newServiceApplier(client, opts.ControllerName, endpointSliceInformer.Lister(), opts.CoalesceWrites,
			topology.Options{Allocator: opts.Allocator, Hysteresis: opts.Hysteresis}, m, recorder),
		max:      int(opts.MaxEndpointsPerSlice),
		compact:  opts.Compact,
		checks:   syncChecks{fqdn: opts.FQDN, selector: opts.AllowSelector, undeclared: opts.AllowUndeclaredPortNames},
		owner:    opts.Owner,
		nodes:    opts.Nodes,
		services: map[string]*writerState{},
	}
	enqueue := opts.Requeue
	if enqueue == nil {
		enqueue = func(string) {}
	}
	if _, err := addHandlers(map[cache.SharedIndexInformer]cache.ResourceEventHandler{
		endpointSliceInformer.Informer(): sliceEvents{managedBy: w.name, tracker: w.tracker, enqueue: enqueue}.funcs(),
	}); err != nil {
		return nil, err
	}
	return w, nil
}

// Sync makes the Writer's EndpointSlices of service hold exactly the
// desired endpoints (groups of one address type and port set each, as
// GroupsFrom builds them; none leaves one empty placeholder slice per
// address type, as upstream does for a Service without endpoints), and
// returns once the writes are made. The Service's spec decides the
// address types (ipFamilies, else the cluster IP's family, else both),
// its labels are copied to the slices, and its annotations and
// trafficDistribution the hints.
//
// Before anything is written it refuses, naming each group and value:
// a Service with a selector (unless WriterOptions.AllowSelector), a
// group of another address type than the Writer's (FQDN for a Writer
// with WriterOptions.FQDN, else the Service's IP families), ports
// outside 1..65535, with names that are not DNS labels or are repeated,
// or (unless WriterOptions.AllowUndeclaredPortNames) with names the
// Service's ports do not have, and addresses or other fields the API
// server would refuse: then the returned error wraps one
// slicer.InvalidSlice per slice of the plan that the API server would
// refuse (a loopback or link-local address, say), found with errors.As.
//
// It returns an error wrapping ErrStaleInformer, having written nothing,
// when the informer lags behind the Writer's own writes; a *HeldError
// when CoalesceWrites held the writes back; and otherwise the errors of
// the plan (an endpoint repeated in a group) or of the writes. After an
// error, sync the Service again (with backoff): each Sync plans from the
// informer's current view.
func (w *Writer) Sync(ctx context.Context, service *corev1.Service, desired []slicer.Group) error {
	err := w.sync(ctx, service, desired)
	var held *HeldError
	if errors.As(err, &held) {
		w.metrics.syncResult(nil) // held back, as planned: a success, as in the controller
	} else {
		w.metrics.syncResult(err)
	}
	return err
}

func (w *Writer) sync(ctx context.Context, svc *corev1.Service, desired []slicer.Group) error {
	if svc == nil {
		return errors.New("endpointslice: Sync: service is nil")
	}
	if err := w.checks.check(svc, desired); err != nil {
		return err
	}
	st, existing, err := w.begin("Sync", svc)
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	trigger := earliest(w.now(), st.heldTrigger)
	policy, td := adapter.PolicyForService(svc)
	facts := ServiceFacts(svc, trigger)
	facts.TopologyHints = policy != topology.PolicyNone
	if w.checks.fqdn {
		facts.AddressTypes = []slicer.AddressType{slicer.FQDN}
	}
	if w.owner != nil {
		o, err := w.owner(svc)
		if err != nil {
			return fmt.Errorf("endpointslice: owner of Service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		apiVersion, kind := o.GroupVersionKind.ToAPIVersionAndKind()
		facts.Owner = slicer.OwnerRef{APIVersion: apiVersion, Kind: kind, Name: o.Name, UID: string(o.UID), Controller: true}
	}
	have, err := st.conv.Existing(existing)
	if err != nil {
		return err
	}
	plan, err := st.core.Reconcile(facts, desired, have)
	if err != nil {
		return err
	}
	if len(plan.Invalid) > 0 {
		errs := make([]error, len(plan.Invalid))
		for i, inv := range plan.Invalid {
			errs[i] = inv
		}
		return fmt.Errorf("endpointslice: Service %s/%s: nothing written, the API server would refuse %d slices: %w",
			svc.Namespace, svc.Name, len(plan.Invalid), errors.Join(errs...))
	}
	var capacity topology.Capacity
	if policy == topology.PolicyAuto && w.nodes != nil {
		nodes, err := w.nodes.List(labels.Everything())
		if err != nil {
			return fmt.Errorf("endpointslice: listing nodes for the hints of Service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		capacity = adapter.CapacityFromAPI(nodes)
	}
	out, err := w.apply(ctx, svc, &st.writeState, &plan, existing, trigger, policy, td, capacity)
	if out.held > 0 {
		return &HeldError{RetryAfter: out.held}
	}
	if err != nil {
		w.recorder.Eventf(svc, corev1.EventTypeWarning, ReasonFailedToUpdateEndpointSlices,
			"Error updating Endpoint Slices for Service %s/%s: %v", svc.Namespace, svc.Name, err)
	}
	return err
}

// Delete deletes every EndpointSlice of the Writer's for service (only
// its namespace and name are used), for a source that went away, and
// forgets the Service. It returns an error wrapping ErrStaleInformer,
// having deleted nothing, when the informer lags behind the Writer's
// own writes, so that no slice it just created is missed; call it again
// then, as after any error. Slices of other managers stay.
func (w *Writer) Delete(ctx context.Context, service *corev1.Service) error {
	st, existing, err := w.begin("Delete", service)
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if err := w.sliceWriter("Service "+service.Namespace+"/"+service.Name).deleteEach(ctx, service.Namespace, existing); err != nil {
		return err
	}
	key := service.Namespace + "/" + service.Name
	w.mu.Lock()
	delete(w.services, key)
	w.mu.Unlock()
	w.metrics.deleteService(types.NamespacedName{Namespace: service.Namespace, Name: service.Name})
	return nil
}

// begin starts a Sync or Delete (op) of svc: it returns the Service's
// state, locked (the caller unlocks it), and the Writer's slices of it;
// on failure nothing stays locked.
func (w *Writer) begin(op string, svc *corev1.Service) (*writerState, []*discovery.EndpointSlice, error) {
	if svc == nil {
		return nil, nil, fmt.Errorf("endpointslice: %s: service is nil", op)
	}
	st, err := w.lock(svc)
	if err != nil {
		return nil, nil, err
	}
	existing, err := w.existing(svc)
	if err != nil {
		st.mu.Unlock()
		return nil, nil, err
	}
	return st, existing, nil
}

// lock returns the Service's state, created on first use, locked.
func (w *Writer) lock(svc *corev1.Service) (*writerState, error) {
	key := svc.Namespace + "/" + svc.Name
	w.mu.Lock()
	st := w.services[key]
	if st == nil {
		core, err := slicer.NewReconciler(slicer.Options{MaxEndpointsPerSlice: w.max, ControllerName: w.name, Compact: w.compact})
		if err != nil {
			w.mu.Unlock()
			return nil, err
		}
		st = &writerState{core: core}
		w.services[key] = st
	}
	w.mu.Unlock()
	st.mu.Lock()
	return st, nil
}

// existing lists the Writer's slices of the Service that are not being
// deleted, failing with ErrStaleInformer when the informer lags behind
// the Writer's writes.
func (w *Writer) existing(svc *corev1.Service) ([]*discovery.EndpointSlice, error) {
	nn := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	list, err := w.list(nn)
	if err != nil {
		return nil, err
	}
	list = withoutDeleting(list)
	if err := w.fresh("service", nn, list); err != nil {
		return nil, err
	}
	return list, nil
}

// noEvents is the event recorder of a Writer without one.
type noEvents struct{}

func (noEvents) Event(runtime.Object, string, string, string)                                      {}
func (noEvents) Eventf(runtime.Object, string, string, string, ...any)                             {}
func (noEvents) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...any) {}
