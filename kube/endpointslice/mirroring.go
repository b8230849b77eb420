//lint:file-ignore SA1019 the mirroring controller exists to read the deprecated core/v1 Endpoints API

package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
)

// MirroringControllerName is the managed-by label value of mirrored
// slices, as upstream's.
const MirroringControllerName = slicer.MirroringControllerName

// Event reasons the mirroring controller records on Endpoints, as upstream's.
const (
	ReasonInvalidIPAddress         = "InvalidIPAddress"
	ReasonTooManyAddressesToMirror = "TooManyAddressesToMirror"
)

// Upstream's mirroring queue constants.
const (
	mirrorMaxSyncBackOff = 100 * time.Second
	// annotationLeaderElection marks an Endpoints object used as a leader
	// election lock, which is never mirrored.
	annotationLeaderElection = "control-plane.alpha.kubernetes.io/leader"
)

// EndpointsFromAPI converts a core/v1 Endpoints object to the slicer's
// input for Mirror. Nil gives the zero Endpoints.
func EndpointsFromAPI(ep *corev1.Endpoints) slicer.Endpoints {
	if ep == nil {
		return slicer.Endpoints{}
	}
	out := slicer.Endpoints{
		Namespace: ep.Namespace, Name: ep.Name, UID: string(ep.UID),
		Labels: ep.Labels, Annotations: ep.Annotations,
		Subsets:  make([]slicer.EndpointsSubset, len(ep.Subsets)),
		Deleting: ep.DeletionTimestamp != nil,
	}
	for i, ss := range ep.Subsets {
		sub := slicer.EndpointsSubset{
			Addresses:         endpointsAddresses(ss.Addresses),
			NotReadyAddresses: endpointsAddresses(ss.NotReadyAddresses),
			Ports:             make([]slicer.Port, len(ss.Ports)),
		}
		for j, p := range ss.Ports {
			sub.Ports[j] = slicer.Port{Name: p.Name, Port: p.Port, Protocol: string(p.Protocol), AppProtocol: deref(p.AppProtocol)}
		}
		out.Subsets[i] = sub
	}
	return out
}

func endpointsAddresses(in []corev1.EndpointAddress) []slicer.EndpointsAddress {
	if in == nil {
		return nil
	}
	out := make([]slicer.EndpointsAddress, len(in))
	for i, a := range in {
		out[i] = slicer.EndpointsAddress{IP: a.IP, Hostname: a.Hostname, NodeName: deref(a.NodeName)}
		if r := a.TargetRef; r != nil {
			out[i].TargetRef = slicer.ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: string(r.UID),
				APIVersion: r.APIVersion, ResourceVersion: r.ResourceVersion, FieldPath: r.FieldPath}
		}
	}
	return out
}

// MirroringController is the EndpointSliceMirroring controller: it
// mirrors custom Endpoints objects (those of Services without a
// selector) into EndpointSlices, as kube-controller-manager's does
// (k8s.io/kubernetes v1.37.2, pkg/controller/endpointslicemirroring),
// with slicer.Mirror as the reconciler. Same queue (1 s doubling to
// 100 s, 10 qps overall, 15 retries), same rules about which objects are
// mirrored (not those labelled endpointslice.kubernetes.io/skip-mirror
// "true", not leader-election locks, only while the Service exists and
// has no selector; otherwise the mirrored slices are deleted), the same
// stale-informer guard and events, and (with a Registerer in
// MirroringOptions) upstream's endpoint_slice_mirroring_controller_*
// metrics.
type MirroringController struct {
	*applier     // stale-informer guard, writes, changes count, events
	maxSubset    int
	batch        time.Duration
	broadcast    record.EventBroadcaster // nil with a caller's recorder
	mirrorMetric *mirroringMetrics

	endpointsLister corelisters.EndpointsLister
	sliceLister     discoverylisters.EndpointSliceLister
	serviceLister   corelisters.ServiceLister
	synced          []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
}

// NewMirroringController returns a mirroring controller with the
// signature of upstream's endpointslicemirroring.NewController. It panics
// if maxEndpointsPerSubset is outside 1..1000.
func NewMirroringController(ctx context.Context, endpointsInformer coreinformers.EndpointsInformer,
	endpointSliceInformer discoveryinformers.EndpointSliceInformer,
	serviceInformer coreinformers.ServiceInformer,
	maxEndpointsPerSubset int32,
	client clientset.Interface,
	endpointUpdatesBatchPeriod time.Duration,
) *MirroringController {
	c, err := NewMirroringControllerWithRecorder(ctx, endpointsInformer, endpointSliceInformer, serviceInformer,
		maxEndpointsPerSubset, client, endpointUpdatesBatchPeriod, nil)
	if err != nil {
		panic(err)
	}
	return c
}

// NewMirroringControllerWithRecorder is NewMirroringController with an
// error instead of a panic, and the event recorder of the caller's
// choice (nil: a broadcaster to the API server, started by Run).
func NewMirroringControllerWithRecorder(ctx context.Context, endpointsInformer coreinformers.EndpointsInformer,
	endpointSliceInformer discoveryinformers.EndpointSliceInformer,
	serviceInformer coreinformers.ServiceInformer,
	maxEndpointsPerSubset int32,
	client clientset.Interface,
	endpointUpdatesBatchPeriod time.Duration,
	recorder record.EventRecorder,
) (*MirroringController, error) {
	if maxEndpointsPerSubset == 0 { // refused, as upstream's command line does
		return nil, fmt.Errorf("endpointslice: maxEndpointsPerSubset 0: must be 1..%d", slicer.MaxEndpoints)
	}
	return NewMirroringControllerWithOptions(ctx, endpointsInformer, endpointSliceInformer, serviceInformer, client, MirroringOptions{
		MaxEndpointsPerSubset: maxEndpointsPerSubset, EndpointUpdatesBatchPeriod: endpointUpdatesBatchPeriod, EventRecorder: recorder})
}

// MirroringOptions configure NewMirroringControllerWithOptions.
type MirroringOptions struct {
	// MaxEndpointsPerSubset is 1..1000 (kube-controller-manager's
	// --mirroring-max-endpoints-per-subset); 0 means 1000, its default.
	MaxEndpointsPerSubset int32
	// EndpointUpdatesBatchPeriod delays the sync an EndpointSlice change
	// causes (--mirroring-endpointslice-updates-batch-period).
	EndpointUpdatesBatchPeriod time.Duration
	// EventRecorder records the controller's events; nil means a
	// broadcaster to the API server through the client, started by Run.
	EventRecorder record.EventRecorder
	// Registerer receives upstream's endpoint_slice_mirroring_controller_*
	// metrics; nil records none. Nothing is registered globally.
	Registerer prometheus.Registerer
}

// NewMirroringControllerWithOptions returns a mirroring controller with
// the choices of opts. It fails on an invalid MaxEndpointsPerSubset or
// when the metrics cannot be registered.
func NewMirroringControllerWithOptions(ctx context.Context, endpointsInformer coreinformers.EndpointsInformer,
	endpointSliceInformer discoveryinformers.EndpointSliceInformer,
	serviceInformer coreinformers.ServiceInformer,
	client clientset.Interface, opts MirroringOptions) (*MirroringController, error) {
	if opts.MaxEndpointsPerSubset == 0 {
		opts.MaxEndpointsPerSubset = slicer.MaxEndpoints
	}
	if opts.MaxEndpointsPerSubset < 1 || opts.MaxEndpointsPerSubset > slicer.MaxEndpoints {
		return nil, fmt.Errorf("endpointslice: MaxEndpointsPerSubset %d: must be 1..%d", opts.MaxEndpointsPerSubset, slicer.MaxEndpoints)
	}
	m, err := newMirroringMetrics(opts.Registerer, int(opts.MaxEndpointsPerSubset))
	if err != nil {
		return nil, err
	}
	c := &MirroringController{
		applier:         newApplier(client, MirroringControllerName, 0, topology.Options{}, nil, opts.EventRecorder),
		maxSubset:       int(opts.MaxEndpointsPerSubset),
		batch:           opts.EndpointUpdatesBatchPeriod,
		mirrorMetric:    m,
		queue:           newKeyQueue("endpoint_slice_mirroring", mirrorMaxSyncBackOff),
		endpointsLister: endpointsInformer.Lister(),
		sliceLister:     endpointSliceInformer.Lister(),
		serviceLister:   serviceInformer.Lister(),
	}
	if m != nil {
		c.changes = m.change
	}
	if c.recorder == nil {
		c.broadcast = record.NewBroadcaster(record.WithContext(ctx))
		c.recorder = c.broadcast.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "endpoint-slice-mirroring-controller"})
	}
	synced, err := addHandlers(map[cache.SharedIndexInformer]cache.ResourceEventHandler{
		endpointsInformer.Informer(): cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if ep, ok := obj.(*corev1.Endpoints); ok && shouldMirror(ep) {
					c.queueKey(obj)
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				o, ok1 := oldObj.(*corev1.Endpoints)
				n, ok2 := newObj.(*corev1.Endpoints)
				if ok1 && ok2 && (shouldMirror(o) || shouldMirror(n)) {
					c.queueKey(newObj)
				}
			},
			DeleteFunc: func(obj any) {
				ep, ok := obj.(*corev1.Endpoints)
				if t, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
					ep, ok = t.Obj.(*corev1.Endpoints)
				}
				if ok && shouldMirror(ep) {
					c.queueKey(obj)
				}
			},
		},
		serviceInformer.Informer(): cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if s, ok := obj.(*corev1.Service); ok && s.Spec.Selector == nil {
					c.queueKey(obj)
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				o, ok1 := oldObj.(*corev1.Service)
				n, ok2 := newObj.(*corev1.Service)
				if ok1 && ok2 && (o.Spec.Selector == nil) != (n.Spec.Selector == nil) {
					c.queueKey(newObj)
				}
			},
			DeleteFunc: func(obj any) {
				s, ok := obj.(*corev1.Service)
				if t, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
					s, ok = t.Obj.(*corev1.Service)
				}
				if ok && s.Spec.Selector == nil {
					c.queueKey(obj)
				}
			},
		},
		endpointSliceInformer.Informer(): sliceEvents{managedBy: MirroringControllerName, tracker: c.tracker,
			enqueue: afterDelay(c.queue, c.batch)}.funcs(),
	})
	if err != nil {
		return nil, err
	}
	c.synced = synced
	return c, nil
}

// shouldMirror reports whether an Endpoints object is mirrored at all.
func shouldMirror(ep *corev1.Endpoints) bool {
	if ep == nil || ep.Labels[discovery.LabelSkipMirror] == "true" {
		return false
	}
	_, lock := ep.Annotations[annotationLeaderElection]
	return !lock
}

func (c *MirroringController) queueKey(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("endpointslice: no key for %T: %w", obj, err))
		return
	}
	c.queue.Add(key)
}

// Run waits for the informers' caches, then runs workers workers until
// ctx ends, and returns when they have stopped.
func (c *MirroringController) Run(ctx context.Context, workers int) {
	var fns []func(context.Context)
	for range workers {
		fns = append(fns, c.worker)
	}
	runLoop(ctx, "EndpointSliceMirroring controller", c.client, c.broadcast, c.synced,
		[]workqueue.TypedRateLimitingInterface[string]{c.queue}, fns)
}

func (c *MirroringController) worker(ctx context.Context) {
	work(ctx, c.queue, func(ctx context.Context, key string) {
		start := time.Now()
		err := c.syncEndpoints(ctx, key)
		c.mirrorMetric.synced(time.Since(start))
		retryOrDrop(ctx, c.queue, key, err, "Error mirroring EndpointSlices for Endpoints, retrying", "Endpoints")
	})
}

// syncEndpoints mirrors the Endpoints object with this key, or deletes
// its mirrored slices when it should not be mirrored.
func (c *MirroringController) syncEndpoints(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	nn := types.NamespacedName{Namespace: ns, Name: name}
	ep, err := c.endpointsLister.Endpoints(ns).Get(name)
	if apierrors.IsNotFound(err) || err == nil && !shouldMirror(ep) {
		return c.deleteMirrored(ctx, nn)
	}
	if err != nil {
		return err
	}
	svc, err := c.serviceLister.Services(ns).Get(name)
	if apierrors.IsNotFound(err) || err == nil && svc.Spec.Selector != nil {
		return c.deleteMirrored(ctx, nn)
	}
	if err != nil {
		return err
	}
	existing, err := c.mirroredSlices(nn)
	if err != nil {
		return err
	}
	if err := c.fresh("endpoints", nn, existing); err != nil {
		return err
	}
	var conv Converter
	have, err := conv.Existing(existing)
	if err != nil {
		return err
	}
	plan, err := slicer.Mirror(EndpointsFromAPI(ep), have, slicer.MirrorOptions{MaxEndpointsPerSubset: c.maxSubset})
	if err != nil {
		return err
	}
	c.mirrorMetric.mirrored(nn, &plan)
	if plan.Invalid > 0 {
		c.recorder.Eventf(ep, corev1.EventTypeWarning, ReasonInvalidIPAddress,
			"Skipped %d invalid IP addresses when mirroring to EndpointSlices", plan.Invalid)
	}
	if plan.Skipped > plan.Invalid {
		c.recorder.Eventf(ep, corev1.EventTypeWarning, ReasonTooManyAddressesToMirror,
			"A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped", c.maxSubset, plan.Skipped)
	}
	return c.writeOnePass(ctx, "Endpoints "+ep.Namespace+"/"+ep.Name, ep.Namespace, plan.Plan, existing, ep.DeletionTimestamp == nil)
}

func (c *MirroringController) mirroredSlices(nn types.NamespacedName) ([]*discovery.EndpointSlice, error) {
	return c.sliceLister.EndpointSlices(nn.Namespace).List(labels.Set{
		discovery.LabelServiceName: nn.Name, discovery.LabelManagedBy: MirroringControllerName,
	}.AsSelectorPreValidated())
}

// deleteMirrored deletes every slice mirrored for the Endpoints and
// forgets it.
func (c *MirroringController) deleteMirrored(ctx context.Context, nn types.NamespacedName) error {
	c.tracker.deleteService(nn)
	existing, err := c.mirroredSlices(nn)
	if err != nil {
		return err
	}
	c.mirrorMetric.forget(nn) // upstream counts none of these deletes as changes
	var errs []error
	for _, s := range existing {
		if err := c.client.DiscoveryV1().EndpointSlices(nn.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("deleting %d of %d EndpointSlices for %s Endpoints: %w", len(errs), len(existing), nn, errors.Join(errs...))
	}
	return nil
}
