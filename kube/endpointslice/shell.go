package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// newKeyQueue is upstream's queue of both controllers: per-key
// exponential backoff from 1 s to maxBackoff, and 10 qps (burst 100)
// overall for retries.
func newKeyQueue(name string, maxBackoff time.Duration) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedMaxOfRateLimiter(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](defaultSyncBackOff, maxBackoff),
			&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
		),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name},
	)
}

// addHandlers registers each handler on its informer and returns the
// informers' HasSynced functions.
func addHandlers(handlers map[cache.SharedIndexInformer]cache.ResourceEventHandler) ([]cache.InformerSynced, error) {
	var synced []cache.InformerSynced
	for inf, h := range handlers {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, fmt.Errorf("endpointslice: adding an event handler: %w", err)
		}
		synced = append(synced, inf.HasSynced)
	}
	return synced, nil
}

// runLoop is the shared body of both controllers' Run: start the event
// broadcaster (if the controller owns one), wait for the caches, run the
// worker functions (each until ctx ends), and on return shut the queues
// down and wait for the workers.
func runLoop(ctx context.Context, what string, client clientset.Interface, broadcast record.EventBroadcaster,
	synced []cache.InformerSynced, queues []workqueue.TypedRateLimitingInterface[string], workers []func(context.Context)) {
	defer utilruntime.HandleCrash()
	if broadcast != nil {
		broadcast.StartStructuredLogging(3)
		broadcast.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		defer broadcast.Shutdown()
	}
	logger := klog.FromContext(ctx)
	logger.Info("Starting " + what)
	var wg sync.WaitGroup
	defer func() {
		logger.Info("Shutting down " + what)
		for _, q := range queues {
			q.ShutDown()
		}
		wg.Wait()
	}()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, synced...) {
		return
	}
	for _, w := range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, w, time.Second) })
	}
	<-ctx.Done()
}

// queueObject adds the key ("namespace/name") of an informer event's
// object, tombstones included, to q.
func queueObject(q workqueue.TypedRateLimitingInterface[string], obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("endpointslice: no key for %T: %w", obj, err))
		return
	}
	q.Add(key)
}

// work is the loop of a worker of either controller: take a key from
// q, process it, mark it done; until q shuts down.
func work(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], process func(ctx context.Context, key string)) {
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		process(ctx, key)
		q.Done(key)
	}
}

// retryOrDrop is upstream's handleErr of both controllers: a key whose
// sync succeeded is forgotten; one that failed is requeued with q's
// backoff up to maxRetries times (logging retrying), then dropped and
// the error handed to utilruntime. what names the key's object in the
// log lines ("service", "Endpoints").
func retryOrDrop(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], key string, err error, retrying, what string) {
	if err == nil {
		q.Forget(key)
		return
	}
	logger := klog.FromContext(ctx)
	if q.NumRequeues(key) < maxRetries {
		logger.Info(retrying, "key", key, "err", err)
		q.AddRateLimited(key)
		return
	}
	logger.Info("Retry budget exceeded, dropping "+what+" out of the queue", "key", key, "err", err)
	q.Forget(key)
	utilruntime.HandleErrorWithContext(ctx, err, "Dropping "+what+" out of the queue", "key", key)
}

// sliceWriter sends a plan's objects for one owner (a Service or an
// Endpoints object) in upstream's order, creates, updates, deletes,
// recording each result in the tracker and counting it with change, and
// stops at the first failure. Creates into a terminating namespace end
// the writes quietly, as upstream.
type sliceWriter struct {
	client  clientset.Interface
	tracker *sliceTracker
	change  func(op string) // may be nil
	owner   string          // "Service ns/name" or "Endpoints ns/name", for errors
}

func (w sliceWriter) count(op string) {
	if w.change != nil {
		w.change(op)
	}
}

// deleteEach deletes every slice of list, whatever the others' results
// (recording each in the tracker and counting it with change), and
// returns the failures joined: the one way the front-ends delete slices
// outside a plan's own writes (a Writer's Delete, the mirroring
// controller's slices of an Endpoints object no longer mirrored, the
// slices of address types a Service no longer has).
func (w sliceWriter) deleteEach(ctx context.Context, ns string, list []*discovery.EndpointSlice) error {
	var errs []error
	for _, s := range list {
		if _, err := w.send(ctx, ns, nil, nil, []*discovery.EndpointSlice{s}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// write is send without the report: the writes of an owner whose
// address types are written in one pass (the mirroring controller's),
// or of deletes only.
func (w sliceWriter) write(ctx context.Context, ns string, creates, updates, deletes []*discovery.EndpointSlice) error {
	_, err := w.send(ctx, ns, creates, updates, deletes)
	return err
}

// send is write that also reports whether every object was written:
// false after a failure, and after a create refused because the
// namespace is terminating (which is no error).
func (w sliceWriter) send(ctx context.Context, ns string, creates, updates, deletes []*discovery.EndpointSlice) (bool, error) {
	api := w.client.DiscoveryV1().EndpointSlices(ns)
	for _, s := range creates {
		created, err := api.Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return false, nil
			}
			return false, fmt.Errorf("failed to create EndpointSlice for %s: %w", w.owner, err)
		}
		if err := asStored(created); err != nil {
			return false, err
		}
		w.tracker.update(created)
		w.count("create")
	}
	for _, s := range updates {
		updated, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return false, fmt.Errorf("failed to update %s EndpointSlice for %s: %w", s.Name, w.owner, err)
		}
		if err := asStored(updated); err != nil {
			return false, err
		}
		w.tracker.update(updated)
		w.count("update")
	}
	for _, s := range deletes {
		if err := api.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			return false, fmt.Errorf("failed to delete %s EndpointSlice for %s: %w", s.Name, w.owner, err)
		}
		w.tracker.expectDeletion(s)
		w.count("delete")
	}
	return true, nil
}

// asStored checks that a slice the API server returned from a write has
// what the stale-informer guard tells writes apart by: a UID and a
// generation, which the API server always sets. A fake clientset sets
// neither, and the guard would silently let duplicates through.
func asStored(s *discovery.EndpointSlice) error {
	if s.UID == "" || s.Generation == 0 {
		return fmt.Errorf("endpointslice: EndpointSlice %s/%s came back from the write with UID %q and generation %d: "+
			"the stale-informer guard needs both, as the API server sets them (with a fake clientset, call endpointslicetest.ActAsAPIServer)",
			s.Namespace, s.Name, s.UID, s.Generation)
	}
	return nil
}
