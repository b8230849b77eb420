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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
)

// ControllerName is the managed-by label value of the EndpointSlice
// controller, as upstream's.
const ControllerName = slicer.DefaultControllerName

// Upstream's queueing constants (k8s.io/kubernetes/pkg/controller/endpointslice).
const (
	// maxRetries is how often a failing Service is retried before it is
	// dropped (1 s doubling, up to 1000 s).
	maxRetries = 15
	// endpointSliceChangeMinSyncDelay is the least delay of a sync caused
	// by an EndpointSlice event.
	endpointSliceChangeMinSyncDelay = time.Second
	defaultSyncBackOff              = time.Second
	maxSyncBackOff                  = 1000 * time.Second
	topologyQueueKey                = "topology"
)

// Event reasons recorded on Services, as upstream's controller records them.
const (
	ReasonFailedToListPods             = "FailedToListPods"
	ReasonFailedToListEndpointSlices   = "FailedToListEndpointSlices"
	ReasonFailedToUpdateEndpointSlices = "FailedToUpdateEndpointSlices"
)

// ControllerOptions configure NewControllerWithOptions. The zero value is
// upstream's controller with 100 endpoints per slice, no batching, no
// metrics, and events sent to the API server.
type ControllerOptions struct {
	// MaxEndpointsPerSlice is 1..1000; 0 means 100.
	MaxEndpointsPerSlice int32
	// EndpointUpdatesBatchPeriod delays the sync a pod change causes, so
	// that changes batch into fewer writes (kube-controller-manager's
	// --endpointslice-updates-batch-period).
	EndpointUpdatesBatchPeriod time.Duration
	// ControllerName is the managed-by label value of the slices this
	// controller owns; "" means ControllerName. It must be a valid label
	// value. Two controllers with different names leave each other's
	// slices alone.
	ControllerName string
	// Compact is slicer.Options.Compact: repack slices that are rewritten
	// anyway, so churn leaves fewer, fuller slices.
	Compact bool
	// Allocator and Hysteresis are topology.Options' for Services with
	// Auto hints; the zero values are upstream's allocation. Allocator
	// must be AllocatorUpstream or AllocatorMinCrossZone. Hysteresis must
	// be 0..10 (not NaN or infinite; topology would silently treat such
	// values as 0), and takes effect with AllocatorMinCrossZone only.
	Allocator  topology.Allocator
	Hysteresis float64
	// CoalesceWrites, when positive, is the least time between two
	// syncs of a Service that write: a sync with writes to make sooner
	// after the Service's last write holds them back and requeues the
	// Service for when the time is up, and the writes of that sync then
	// carry every change since. The first change after a quiet spell is
	// written at once (unlike with a batch period, which delays every
	// pod change); in a burst of pod changes a Service is written at most
	// once per CoalesceWrites, so a change inside a burst waits up to that
	// long (steady churn is one long burst). The last-change-trigger-time is the
	// earliest of the held changes'. A held sync counts as a successful
	// sync in the metrics, but not in the per-sync ones (endpoints added
	// and removed, slices changed): the sync that writes records the
	// changes held. Zero is upstream's behaviour: every
	// sync writes what it planned, and a controller whose syncs are fast
	// (as this one's) splits a burst into more, smaller writes than
	// upstream's. It must not be negative.
	CoalesceWrites time.Duration
	// Registerer receives upstream's endpoint_slice_controller_* metrics
	// (names, help, types, labels, buckets); nil records none. Nothing is
	// registered globally. They are recorded as upstream's reconciler
	// records them: the per-sync histograms once per address type of the
	// Service, and the efficiency gauges with each Service's figures for
	// the last address type reconciled (IPv6 for a dual-stack Service;
	// upstream's order is random, so where the two families' figures
	// differ upstream may count either). TestControllerMetricsMatchUpstream
	// requires the same families and values as upstream's controller for
	// single-stack and dual-stack Services, placeholders, pods turning
	// ready and not ready or deleted, and Services being deleted and
	// deleted; TestControllerMetricsMatchUpstreamOnWriteFailures with
	// failed creates and updates and creates refused because the
	// namespace is terminating (after which, as upstream, no
	// slices-changed observation is made for that address type only);
	// TestControllerMetricsMatchUpstreamTopology with Services using
	// trafficDistribution PreferClose and Auto hints (the topology and
	// traffic_distribution labels, and the Services per
	// trafficDistribution, whose series stays at zero once its last
	// Service stops using the value).
	Registerer prometheus.Registerer
	// EventRecorder records the controller's events; nil means a
	// broadcaster to the API server through the client (as upstream),
	// started by Run.
	EventRecorder record.EventRecorder
}

// Controller is the EndpointSlice controller: it keeps the EndpointSlices
// of every Service with a selector in line with the pods it selects, as
// kube-controller-manager's does (k8s.io/kubernetes v1.37.2,
// pkg/controller/endpointslice), with fairslice's reconciler (a Syncer
// per Service) and topology package in place of k8s.io/endpointslice.
//
// What it shares with upstream: a rate-limited work queue of Service keys
// (1 s doubling to 1000 s per key, 10 qps overall, 15 retries); pod
// changes that matter to endpoints (labels, hostname, readiness, IPs,
// deletion) queue the matching Services after the batch period;
// EndpointSlice changes not made by this controller queue their Service
// after max(1 s, batch period); Services of type ExternalName and without
// a selector are skipped; slices being deleted are ignored; each address
// type of a Service is written on its own (creates, updates, deletes),
// so that a failed write ends the writes of its address type only, and a
// create refused because the namespace is terminating ends them without
// an error; a sync whose
// informer has not yet seen the controller's own writes fails with
// ErrStaleInformer and is retried, so no duplicate slices are created;
// the last-change-trigger-time annotation; Auto hints and
// trafficDistribution hints (PreferSame* enabled, as the locked feature
// gate of 1.37); node changes that overload a Service's hints requeue it;
// events and metrics with upstream's names.
//
// Where it differs: pods are mapped to Services in the informer's event
// handler rather than in a second queue; the pod to endpoint conversion
// is remembered between syncs (see Syncer), so a sync in which nothing
// changed does almost no work; metrics go to the registerer of the
// options only. Its syncs being faster, a burst of pod changes is split
// over more syncs than upstream's, each writing its share: with no batch
// period, 2 to 23 percent more writes than upstream's in the bursts
// measured on a real API server (BENCHMARKS.md); given the same changes
// in one sync, both write the same.
// ControllerOptions.CoalesceWrites (off by default) bounds how often a
// Service is written instead.
type Controller struct {
	*serviceApplier // hints, CoalesceWrites, writes, tracker, metrics, events
	batch           time.Duration
	coreOpts        slicer.Options
	broadcast       record.EventBroadcaster // nil with a caller's recorder

	serviceLister corelisters.ServiceLister
	podLister     corelisters.PodLister
	nodeLister    corelisters.NodeLister
	synced        []cache.InformerSynced

	queue     workqueue.TypedRateLimitingInterface[string]
	topoQueue workqueue.TypedRateLimitingInterface[string]
	triggers  *triggerTimes

	mu       sync.Mutex
	services map[string]*serviceState
	capacity topology.Capacity
	hints    map[string]map[slicer.AddressType]map[string]int // Services with Auto hints: hints per zone
}

// serviceState is what the controller keeps per Service between syncs;
// only the worker holding the Service's key touches it.
type serviceState struct {
	syncer *Syncer
	writeState
}

// NewController returns an EndpointSlice controller with the signature
// of upstream's NewController, so that switching is a change of import.
// It panics if maxEndpointsPerSlice is outside 1..1000, 0 included
// (upstream's command line refuses such values; only
// ControllerOptions.MaxEndpointsPerSlice takes 0 to mean 100). Events go
// to the API server; no metrics are recorded (use
// NewControllerWithOptions for both choices).
func NewController(ctx context.Context, podInformer coreinformers.PodInformer,
	serviceInformer coreinformers.ServiceInformer,
	nodeInformer coreinformers.NodeInformer,
	endpointSliceInformer discoveryinformers.EndpointSliceInformer,
	maxEndpointsPerSlice int32,
	client clientset.Interface,
	endpointUpdatesBatchPeriod time.Duration,
) *Controller {
	if maxEndpointsPerSlice == 0 {
		panic(fmt.Sprintf("endpointslice: maxEndpointsPerSlice 0: must be 1..%d", slicer.MaxEndpoints))
	}
	c, err := NewControllerWithOptions(ctx, podInformer, serviceInformer, nodeInformer, endpointSliceInformer, client,
		ControllerOptions{MaxEndpointsPerSlice: maxEndpointsPerSlice, EndpointUpdatesBatchPeriod: endpointUpdatesBatchPeriod})
	if err != nil {
		panic(err)
	}
	return c
}

// maxHysteresis is the largest Hysteresis package topology honours.
const maxHysteresis = 10

// NewControllerWithOptions returns an EndpointSlice controller with the
// extras of opts. It fails, naming every invalid option and its value, on
// an invalid MaxEndpointsPerSlice, ControllerName, Allocator or
// Hysteresis, or a negative EndpointUpdatesBatchPeriod or CoalesceWrites;
// and when the metrics cannot be registered.
func NewControllerWithOptions(ctx context.Context, podInformer coreinformers.PodInformer,
	serviceInformer coreinformers.ServiceInformer,
	nodeInformer coreinformers.NodeInformer,
	endpointSliceInformer discoveryinformers.EndpointSliceInformer,
	client clientset.Interface, opts ControllerOptions) (*Controller, error) {
	if opts.MaxEndpointsPerSlice == 0 {
		opts.MaxEndpointsPerSlice = slicer.DefaultMaxEndpointsPerSlice
	}
	if opts.ControllerName == "" {
		opts.ControllerName = ControllerName
	}
	var errs []error
	if err := checkControllerName(opts.ControllerName); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkShared(opts.MaxEndpointsPerSlice, opts.CoalesceWrites, opts.Allocator, opts.Hysteresis)...)
	if opts.EndpointUpdatesBatchPeriod < 0 {
		errs = append(errs, fmt.Errorf("endpointslice: EndpointUpdatesBatchPeriod %v: must not be negative", opts.EndpointUpdatesBatchPeriod))
	}
	if errs != nil {
		return nil, errors.Join(errs...)
	}
	coreOpts := slicer.Options{MaxEndpointsPerSlice: int(opts.MaxEndpointsPerSlice), ControllerName: opts.ControllerName, Compact: opts.Compact}
	if _, err := slicer.NewReconciler(coreOpts); err != nil {
		return nil, err
	}
	m, err := newControllerMetrics(opts.Registerer, metricsSubsystem, nil, int(opts.MaxEndpointsPerSlice))
	if err != nil {
		return nil, err
	}
	c := &Controller{
		serviceApplier: newServiceApplier(client, opts.ControllerName, endpointSliceInformer.Lister(), opts.CoalesceWrites,
			topology.Options{Allocator: opts.Allocator, Hysteresis: opts.Hysteresis}, m, opts.EventRecorder),
		batch:         opts.EndpointUpdatesBatchPeriod,
		coreOpts:      coreOpts,
		queue:         newKeyQueue("endpoint_slice", maxSyncBackOff),
		topoQueue:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		triggers:      newTriggerTimes(),
		services:      map[string]*serviceState{},
		hints:         map[string]map[slicer.AddressType]map[string]int{},
		serviceLister: serviceInformer.Lister(),
		podLister:     podInformer.Lister(),
		nodeLister:    nodeInformer.Lister(),
	}
	if c.recorder == nil {
		c.broadcast = record.NewBroadcaster(record.WithContext(ctx))
		c.recorder = c.broadcast.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "endpoint-slice-controller"})
	}
	synced, err := addHandlers(map[cache.SharedIndexInformer]cache.ResourceEventHandler{
		serviceInformer.Informer(): cache.ResourceEventHandlerFuncs{
			AddFunc:    c.queueService,
			UpdateFunc: func(_, cur any) { c.queueService(cur) },
			DeleteFunc: c.queueService,
		},
		podInformer.Informer(): cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.onPod(nil, obj) },
			UpdateFunc: c.onPod,
			DeleteFunc: func(obj any) { c.onPod(obj, nil) },
		},
		nodeInformer.Informer(): cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.topoQueue.Add(topologyQueueKey) },
			UpdateFunc: c.onNodeUpdate,
			DeleteFunc: func(any) { c.topoQueue.Add(topologyQueueKey) },
		},
		endpointSliceInformer.Informer(): sliceEvents{managedBy: c.name, tracker: c.tracker,
			enqueue: afterDelay(c.queue, max(endpointSliceChangeMinSyncDelay, c.batch))}.funcs(),
	})
	if err != nil {
		return nil, err
	}
	c.synced = synced
	return c, nil
}

// Run waits for the informers' caches, then runs workers Service workers
// and one topology worker until ctx ends, and returns when they have
// stopped.
func (c *Controller) Run(ctx context.Context, workers int) {
	fns := []func(context.Context){c.topologyWorker}
	for range workers {
		fns = append(fns, c.serviceWorker)
	}
	runLoop(ctx, "endpoint slice controller", c.client, c.broadcast, c.synced,
		[]workqueue.TypedRateLimitingInterface[string]{c.queue, c.topoQueue}, fns)
}

func (c *Controller) serviceWorker(ctx context.Context) {
	work(ctx, c.queue, func(ctx context.Context, key string) { c.handleErr(ctx, key, c.SyncService(ctx, key)) })
}

// handleErr counts a sync's result and retries or forgets its key.
func (c *Controller) handleErr(ctx context.Context, key string, err error) {
	c.metrics.syncResult(err)
	retryOrDrop(ctx, c.queue, key, err, "Error syncing endpoint slices for service, retrying", "service")
}

// SyncService brings the EndpointSlices of the Service with this key
// ("namespace/name") in line with what the informers' caches hold, once,
// as a worker does for a queued key, and returns that sync's error: an
// error wrapping ErrStaleInformer when the slice informer has not yet seen
// this controller's own writes. Run's workers call it for every key they
// take from the queue (and retry failures); a test or tool that fills the
// informers' stores itself may call it directly, with no workers running,
// for syncs at points it chooses. It must not run concurrently with
// another sync of the same key.
func (c *Controller) SyncService(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	nn := types.NamespacedName{Namespace: ns, Name: name}
	svc, err := c.serviceLister.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forgetService(key, nn)
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return nil // no endpoints from this controller (selectorless: see the mirroring controller)
	}
	pods, err := c.podLister.Pods(ns).List(labels.Set(svc.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, ReasonFailedToListPods,
			"Error listing Pods for Service %s/%s: %v", ns, name, err)
		return err
	}
	existing, err := c.list(nn)
	if err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, ReasonFailedToListEndpointSlices,
			"Error listing Endpoint Slices for Service %s/%s: %v", ns, name, err)
		return err
	}
	existing = withoutDeleting(existing)
	if err := c.fresh("service", nn, existing); err != nil {
		return err
	}
	// Computed on every sync, no-op or not, so that the tracker moves on.
	trigger := c.triggers.compute(svc, pods)
	if err := c.reconcile(ctx, key, svc, pods, existing, trigger); err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, ReasonFailedToUpdateEndpointSlices,
			"Error updating Endpoint Slices for Service %s/%s: %v", ns, name, err)
		return err
	}
	return nil
}

// reconcile plans the Service's slices, adds hints, and writes the plan
// (or, with CoalesceWrites, holds it back).
func (c *Controller) reconcile(ctx context.Context, key string, svc *corev1.Service, pods []*corev1.Pod,
	existing []*discovery.EndpointSlice, trigger time.Time) error {
	st, err := c.state(key)
	if err != nil {
		return err
	}
	trigger = earliest(trigger, st.heldTrigger)
	policy, td := adapter.PolicyForService(svc)
	facts := ServiceFacts(svc, trigger)
	facts.TopologyHints = policy != topology.PolicyNone
	plan, skipped, err := st.syncer.Plan(facts, svc, pods, c.nodeLister, existing)
	if err != nil {
		return err
	}
	c.mu.Lock()
	capacity := c.capacity
	c.mu.Unlock()
	out, err := c.apply(ctx, svc, &st.writeState, &plan, existing, trigger, policy, td, capacity)
	if out.held > 0 {
		c.queue.AddAfter(key, out.held)
		return skipped // requeued for when the Service may be written
	}
	c.recordHints(key, policy, out.hints)
	return errors.Join(err, skipped)
}

// state returns the Service's state, creating it on first use.
func (c *Controller) state(key string) (*serviceState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.services[key]; st != nil {
		return st, nil
	}
	s, err := NewSyncer(c.coreOpts)
	if err != nil {
		return nil, err
	}
	st := &serviceState{syncer: s}
	c.services[key] = st
	return st, nil
}

// recordHints keeps the hints per zone of a Service with Auto hints, for
// the overload check after node changes.
func (c *Controller) recordHints(key string, policy topology.Policy, results []topology.TypeResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if policy != topology.PolicyAuto {
		delete(c.hints, key)
		return
	}
	byType := map[slicer.AddressType]map[string]int{}
	for _, r := range results {
		if r.Enabled() && len(r.HintsByZone) > 0 {
			byType[r.AddressType] = r.HintsByZone
		}
	}
	if len(byType) == 0 {
		delete(c.hints, key)
		return
	}
	c.hints[key] = byType
}

// forgetService drops everything kept about a deleted Service.
func (c *Controller) forgetService(key string, nn types.NamespacedName) {
	c.triggers.deleteService(nn)
	c.tracker.deleteService(nn)
	c.metrics.deleteService(nn)
	c.mu.Lock()
	delete(c.services, key)
	delete(c.hints, key)
	c.mu.Unlock()
}

func (c *Controller) queueService(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("endpointslice: no key for %T: %w", obj, err))
		return
	}
	c.queue.Add(key)
}
