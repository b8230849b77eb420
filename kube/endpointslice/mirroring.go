//lint:file-ignore SA1019 the mirroring controller exists to read the deprecated core/v1 Endpoints API

package endpointslice

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/fairslice/fairslice/slicer"
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
	serviceLister   corelisters.ServiceLister
	synced          []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
}

// NewMirroringController returns a mirroring controller with the
// signature of upstream's endpointslicemirroring.NewController, so that
// switching is a change of import. It panics if maxEndpointsPerSubset is
// outside 1..1000, 0 included (upstream's command line refuses such
// values; only MirroringOptions.MaxEndpointsPerSubset takes 0 to mean
// 1000). Events go to the API server; no metrics are recorded (use
// NewMirroringControllerWithOptions for both choices).
func NewMirroringController(ctx context.Context, endpointsInformer coreinformers.EndpointsInformer,
	endpointSliceInformer discoveryinformers.EndpointSliceInformer,
	serviceInformer coreinformers.ServiceInformer,
	maxEndpointsPerSubset int32,
	client clientset.Interface,
	endpointUpdatesBatchPeriod time.Duration,
) *MirroringController {
	if maxEndpointsPerSubset == 0 {
		panic(fmt.Sprintf("endpointslice: maxEndpointsPerSubset 0: must be 1..%d", slicer.MaxEndpoints))
	}
	c, err := NewMirroringControllerWithOptions(ctx, endpointsInformer, endpointSliceInformer, serviceInformer, client,
		MirroringOptions{MaxEndpointsPerSubset: maxEndpointsPerSubset, EndpointUpdatesBatchPeriod: endpointUpdatesBatchPeriod})
	if err != nil {
		panic(err)
	}
	return c
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
		applier:         newApplier(client, MirroringControllerName, endpointSliceInformer.Lister(), nil, opts.EventRecorder),
		maxSubset:       int(opts.MaxEndpointsPerSubset),
		batch:           opts.EndpointUpdatesBatchPeriod,
		mirrorMetric:    m,
		queue:           newKeyQueue("endpoint_slice_mirroring", mirrorMaxSyncBackOff),
		endpointsLister: endpointsInformer.Lister(),
		serviceLister:   serviceInformer.Lister(),
	}
	if m != nil {
		c.changes = m.change
	}
	if c.recorder == nil {
		c.broadcast = record.NewBroadcaster(record.WithContext(ctx))
		c.recorder = c.broadcast.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "endpoint-slice-mirroring-controller"})
	}
	c.synced, err = addHandlers(map[cache.SharedIndexInformer]cache.ResourceEventHandler{
		endpointsInformer.Informer():     c.endpointsEvents(),
		serviceInformer.Informer():       c.serviceEvents(),
		endpointSliceInformer.Informer(): c.sliceEvents(),
	})
	if err != nil {
		return nil, err
	}
	return c, nil
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
