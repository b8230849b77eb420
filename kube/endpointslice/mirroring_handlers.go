//lint:file-ignore SA1019 the mirroring controller exists to read the deprecated core/v1 Endpoints API

package endpointslice

// The mirroring controller's informer events: which Endpoints, Service
// and EndpointSlice changes queue an Endpoints key.

import (
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// endpointsEvents queues an Endpoints object that is mirrored (before
// or after an update): a change to one that is not may still have to
// delete its mirrored slices.
func (c *MirroringController) endpointsEvents() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
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
			if ep, ok := deletedObject[*corev1.Endpoints](obj); ok && shouldMirror(ep) {
				c.queueKey(obj)
			}
		},
	}
}

// serviceEvents queues the Endpoints key of a selectorless Service
// added or deleted, and of a Service that gained or lost its selector.
func (c *MirroringController) serviceEvents() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
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
			if s, ok := deletedObject[*corev1.Service](obj); ok && s.Spec.Selector == nil {
				c.queueKey(obj)
			}
		},
	}
}

// sliceEvents queues, after the batch period, the Endpoints of a
// mirrored slice that someone else changed (see sliceEvents).
func (c *MirroringController) sliceEvents() cache.ResourceEventHandlerFuncs {
	return sliceEvents{managedBy: MirroringControllerName, tracker: c.tracker, enqueue: afterDelay(c.queue, c.batch)}.funcs()
}

// deletedObject returns the object of a delete event as a T, taking it
// out of a tombstone.
func deletedObject[T any](obj any) (T, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	v, ok := obj.(T)
	return v, ok
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
	queueObject(c.queue, obj)
}
