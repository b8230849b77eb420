package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/slicer"
)

// Source is what a WriterController asks of the caller: which Services
// it has endpoints for, and what those endpoints are. Its methods are
// called from the controller's workers, several at once, and must be
// safe for concurrent use; they should read caches (informers, a local
// registry), not call out, since a slow Desired holds a worker.
type Source interface {
	// Keys lists the Services ("namespace/name") the source has
	// endpoints for. It is called when the controller starts writing
	// (after winning the lease) and at every resync; the keys of
	// Services the Writer still has slices of are added to it, so that
	// slices of a Service the source dropped are deleted.
	Keys() ([]string, error)
	// Desired returns the Service with this key and its desired
	// endpoint groups (GroupsFrom builds them). A nil Service means the
	// Service's slices are to be deleted (the Service or its endpoint
	// source is gone). An error is retried with backoff.
	Desired(key string) (*corev1.Service, []slicer.Group, error)
}

// LeaseOptions configure the leader election of a WriterController on a
// coordination.k8s.io Lease, through client-go's leaderelection package.
type LeaseOptions struct {
	// Namespace and Name of the Lease. Required: replicas of one
	// controller share them.
	Namespace, Name string
	// Identity of this replica in the Lease; "" means the host name and
	// a random suffix.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's; 0
	// means 15 s, 10 s and 2 s, kube-controller-manager's defaults.
	// LeaseDuration must exceed RenewDeadline, which must exceed
	// 1.2 × RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// WriterControllerOptions configure NewWriterController.
type WriterControllerOptions struct {
	// Writer configures the controller's Writer; its ControllerName is
	// required, and its Requeue is the controller's own (leave it nil).
	Writer WriterOptions
	// Workers is how many Services are synced at once; 0 means 1.
	Workers int
	// ResyncPeriod is how often every Service is synced again, whether
	// or not the source said it changed; 0 means 10 minutes.
	ResyncPeriod time.Duration
	// Lease is the leader election: only the replica holding the Lease
	// writes. Required unless SingleReplica.
	Lease LeaseOptions
	// SingleReplica runs without leader election. Two replicas of a
	// controller run so both write the same Services' slices, and create
	// duplicates: set it only where one replica runs at a time.
	SingleReplica bool
	// WaitFor are the caches the Source reads, waited for (with the
	// EndpointSlice informer's) before the first sync.
	WaitFor []cache.InformerSynced
}

// WriterController is the loop around a Writer that every user of one
// would otherwise write: a rate-limited work queue of Service keys fed
// by Changed, by the Writer's own repair requests (another party
// changed one of its slices) and by a periodic resync; workers that ask
// the Source for a Service's endpoints and Sync them (or Delete the
// Service's slices when the Source returns no Service); retries with
// upstream's backoff (1 s doubling to 1000 s, 10 qps overall, 15
// retries) of failed syncs, ErrStaleInformer among them; a Sync held
// back by CoalesceWrites (a *HeldError) synced again when the hold
// ends; and leader election on a Lease, so that of several replicas
// only one writes.
//
// Leadership: a replica writes only while it holds the Lease. When it
// loses it (it could not renew within RenewDeadline), its workers stop
// and it stands as a candidate again; another replica takes the Lease
// once LeaseDuration has passed since the last renewal, by which time
// its informer has long seen the old leader's writes (which the
// stale-informer guard, tracking a replica's own writes only, relies
// on). A replica that is stopped does not release the Lease: the next
// leader waits LeaseDuration.
//
// Metrics (with WriterOptions.Registerer), each with the const label
// managed_by=ControllerName: endpoint_slice_writer_syncs{result} (success,
// stale or error; a sync held back by CoalesceWrites counts as a
// success), endpoint_slice_writer_changes{operation},
// endpoint_slice_writer_endpoints_added_per_sync,
// endpoint_slice_writer_endpoints_removed_per_sync,
// endpoint_slice_writer_endpointslices_changed_per_sync{topology,traffic_distribution},
// endpoint_slice_writer_endpoints_desired,
// endpoint_slice_writer_num_endpoint_slices,
// endpoint_slice_writer_desired_endpoint_slices and
// endpoint_slice_writer_services_count_by_traffic_distribution{traffic_distribution}.
//
// Events (with WriterOptions.EventRecorder): on Services,
// FailedToUpdateEndpointSlices (Warning), TopologyAwareHintsEnabled
// (Normal) and TopologyAwareHintsDisabled (Warning); on the Lease,
// client-go's LeaderElection (Normal) when a replica becomes leader.
//
// Run starts the controller's goroutines and stops them before it
// returns; the caller starts the informers.
type WriterController struct {
	w       *Writer
	source  Source
	slices  discoveryinformers.EndpointSliceInformer
	client  clientset.Interface
	workers int
	resync  time.Duration
	lease   *LeaseOptions // nil: SingleReplica
	synced  []cache.InformerSynced
	leading func(bool)                                   // for tests: called when leadership starts and ends
	elector atomic.Pointer[leaderelection.LeaderElector] // the current term's, for tests

	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[string] // while leading, else nil
}

// NewWriterController returns a WriterController writing through client
// with a Writer on endpointSliceInformer (see NewWriter) and the
// endpoints of source. It fails, naming every invalid option and its
// value, on what NewWriter refuses, a nil source, a set Writer.Requeue,
// negative Workers or ResyncPeriod, and (unless SingleReplica) a missing
// or invalid Lease namespace or name or inconsistent lease durations.
func NewWriterController(client clientset.Interface, endpointSliceInformer discoveryinformers.EndpointSliceInformer,
	source Source, opts WriterControllerOptions) (*WriterController, error) {
	errs := checkControllerOptions(source, &opts)
	c := &WriterController{source: source, slices: endpointSliceInformer, client: client,
		workers: max(opts.Workers, 1), resync: opts.ResyncPeriod}
	if c.resync == 0 {
		c.resync = 10 * time.Minute
	}
	if !opts.SingleReplica {
		c.lease = &opts.Lease
	}
	wopts := opts.Writer
	wopts.Requeue = c.Changed
	w, err := NewWriter(client, endpointSliceInformer, wopts)
	if err != nil {
		errs = append(errs, err)
	}
	if errs != nil {
		return nil, errors.Join(errs...)
	}
	c.w = w
	c.synced = append([]cache.InformerSynced{endpointSliceInformer.Informer().HasSynced}, opts.WaitFor...)
	return c, nil
}

// checkControllerOptions checks what NewWriterController adds to the
// Writer's options, filling in the lease defaults.
func checkControllerOptions(source Source, opts *WriterControllerOptions) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("endpointslice: "+format, args...)) }
	if source == nil {
		bad("NewWriterController: source is nil")
	}
	if opts.Writer.Requeue != nil {
		bad("Writer.Requeue: must be nil (the controller queues the Service itself)")
	}
	if opts.Workers < 0 {
		bad("Workers %d: must not be negative", opts.Workers)
	}
	if opts.ResyncPeriod < 0 {
		bad("ResyncPeriod %v: must not be negative", opts.ResyncPeriod)
	}
	if opts.SingleReplica {
		return errs
	}
	l := &opts.Lease
	for _, f := range []struct{ field, value string }{{"Lease.Namespace", l.Namespace}, {"Lease.Name", l.Name}} {
		if f.value == "" {
			bad("%s %q: required (or set SingleReplica)", f.field, f.value)
		} else if msgs := validation.IsDNS1123Subdomain(f.value); len(msgs) > 0 {
			bad("%s %q: %v", f.field, f.value, msgs)
		}
	}
	l.LeaseDuration = cmpOr(l.LeaseDuration, 15*time.Second)
	l.RenewDeadline = cmpOr(l.RenewDeadline, 10*time.Second)
	l.RetryPeriod = cmpOr(l.RetryPeriod, 2*time.Second)
	if l.RetryPeriod < 0 || float64(l.RenewDeadline) <= leaderelection.JitterFactor*float64(l.RetryPeriod) || l.LeaseDuration <= l.RenewDeadline {
		bad("Lease durations %v, %v, %v: must be LeaseDuration > RenewDeadline > %v × RetryPeriod > 0",
			l.LeaseDuration, l.RenewDeadline, l.RetryPeriod, leaderelection.JitterFactor)
	}
	return errs
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Writer returns the controller's Writer.
func (c *WriterController) Writer() *Writer { return c.w }

// Changed queues the Service with this key ("namespace/name") for a
// sync: call it whenever its endpoints may have changed (from an
// informer's event handler, say). While the replica is not the leader it
// does nothing: becoming leader syncs every Service.
func (c *WriterController) Changed(key string) {
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	if q != nil {
		q.Add(key)
	}
}

// Run runs the controller until ctx ends: with leader election, it
// stands for the Lease and writes while it holds it, standing again
// whenever it loses it; with SingleReplica it writes at once. It waits
// for the caches first, and returns once its goroutines have stopped.
func (c *WriterController) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		return
	}
	if c.lease == nil {
		c.lead(ctx)
		return
	}
	id := c.lease.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + string(uuid.NewUUID())
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.lease.Namespace, Name: c.lease.Name},
		Client:     c.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id, EventRecorder: c.w.recorder},
	}
	for ctx.Err() == nil {
		c.term(ctx, lock)
	}
}

// term stands for the Lease once: it writes (in this goroutine) while it
// holds it, and returns when it lost it or ctx ended.
func (c *WriterController) term(ctx context.Context, lock resourcelock.Interface) {
	terms := make(chan context.Context)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: c.lease.Name,
		LeaseDuration: c.lease.LeaseDuration, RenewDeadline: c.lease.RenewDeadline, RetryPeriod: c.lease.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			// Hand the term's context to term's goroutine, which writes.
			OnStartedLeading: func(lctx context.Context) {
				select {
				case terms <- lctx:
				case <-lctx.Done():
				}
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil { // the options were checked
		utilruntime.HandleErrorWithContext(ctx, err, "Leader election of the EndpointSlice Writer")
		<-ctx.Done()
		return
	}
	c.elector.Store(le)
	ended := make(chan struct{})
	go func() { defer close(ended); le.Run(ctx) }()
	for {
		select {
		case lctx := <-terms:
			c.lead(lctx) // until the lease is lost: le.Run then cancels lctx
		case <-ended:
			return
		}
	}
}

// lead writes while ctx lasts: it queues every Service, runs the
// workers and the resync, and returns when they have stopped.
func (c *WriterController) lead(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Writing EndpointSlices", "managedBy", c.w.name)
	if c.leading != nil {
		c.leading(true)
		defer c.leading(false)
	}
	q := newKeyQueue("endpoint_slice_writer", maxSyncBackOff)
	c.mu.Lock()
	c.queue = q
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.queue = nil
		c.mu.Unlock()
	}()
	c.queueAll(ctx, q)
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			work(ctx, q, func(ctx context.Context, key string) {
				if ctx.Err() != nil {
					return // no longer the leader: write nothing
				}
				c.handle(ctx, q, key, c.syncKey(ctx, key))
			})
		})
	}
	wg.Go(func() {
		t := time.NewTicker(c.resync)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				c.queueAll(ctx, q)
			}
		}
	})
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
	logger.Info("Stopped writing EndpointSlices", "managedBy", c.w.name)
}

// queueAll queues the source's Services and those the Writer has slices
// of.
func (c *WriterController) queueAll(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) {
	keys, err := c.source.Keys()
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Listing the Services of the endpoint source")
	}
	for _, k := range keys {
		q.Add(k)
	}
	mine, err := c.slices.Lister().List(labels.Set{discovery.LabelManagedBy: c.w.name}.AsSelectorPreValidated())
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Listing the Writer's EndpointSlices")
		return
	}
	for _, s := range mine {
		if name := s.Labels[discovery.LabelServiceName]; name != "" {
			q.Add(s.Namespace + "/" + name)
		}
	}
}

// syncKey syncs the Service with this key from the source, or deletes
// its slices.
func (c *WriterController) syncKey(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	svc, groups, err := c.source.Desired(key)
	if err != nil {
		return fmt.Errorf("endpointslice: source of Service %s: %w", key, err)
	}
	if svc == nil {
		return c.w.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
	return c.w.Sync(ctx, svc, groups)
}

// handle forgets a key that synced, queues one held back by
// CoalesceWrites for when the hold ends, and retries a failed one with
// backoff (ErrStaleInformer among them).
func (c *WriterController) handle(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], key string, err error) {
	var held *HeldError
	if errors.As(err, &held) {
		q.Forget(key)
		q.AddAfter(key, held.RetryAfter)
		return
	}
	retryOrDrop(ctx, q, key, err, "Error writing EndpointSlices for service, retrying", "service")
}
