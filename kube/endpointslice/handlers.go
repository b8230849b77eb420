package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
)

// onPod queues, after the batch period, the Services a pod event
// concerns, with upstream's rules: an added or deleted pod concerns the
// Services selecting it; an update concerns them only if something
// endpoints are made of changed (readiness, IPs, deletion) or the labels,
// hostname or subdomain changed, and then, if only the labels (and
// hostname) changed, only the Services that select the old or the new
// pod but not both.
func (c *Controller) onPod(oldObj, newObj any) {
	oldPod, newPod := podOf(oldObj), podOf(newObj)
	switch {
	case oldPod == nil && newPod == nil:
		return
	case oldPod == nil:
		c.queueServicesOf(newPod.Namespace, newPod.Labels, nil, true)
		return
	case newPod == nil:
		c.queueServicesOf(oldPod.Namespace, oldPod.Labels, nil, true)
		return
	}
	if oldPod.ResourceVersion == newPod.ResourceVersion {
		return // a resync
	}
	endpointChanged, labelsChanged := podChanges(oldPod, newPod)
	switch {
	case !endpointChanged && !labelsChanged:
	case !labelsChanged:
		c.queueServicesOf(newPod.Namespace, newPod.Labels, nil, true)
	default:
		c.queueServicesOf(newPod.Namespace, newPod.Labels, oldPod.Labels, endpointChanged)
	}
}

// podChanges reports whether a pod update changes its endpoints, and
// whether it changes what decides which Services (and hostname) it has.
// As upstream, any deletion timestamp counts as a change.
func podChanges(oldPod, newPod *corev1.Pod) (endpointChanged, labelsChanged bool) {
	labelsChanged = !maps.Equal(oldPod.Labels, newPod.Labels) ||
		oldPod.Spec.Hostname != newPod.Spec.Hostname || oldPod.Spec.Subdomain != newPod.Spec.Subdomain
	if oldPod.DeletionTimestamp != nil || newPod.DeletionTimestamp != nil || podReady(oldPod) != podReady(newPod) ||
		len(oldPod.Status.PodIPs) != len(newPod.Status.PodIPs) {
		return true, labelsChanged
	}
	for i := range oldPod.Status.PodIPs {
		if oldPod.Status.PodIPs[i].IP != newPod.Status.PodIPs[i].IP {
			return true, labelsChanged
		}
	}
	return false, labelsChanged
}

// queueServicesOf queues the Services of the namespace that select pods
// with labels cur, or (oldLabels non-nil) those selecting cur or old:
// all of them if both is set, else those selecting exactly one.
func (c *Controller) queueServicesOf(ns string, cur, old map[string]string, both bool) {
	svcs, err := c.serviceLister.Services(ns).List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("endpointslice: listing Services of namespace %q: %w", ns, err))
		return
	}
	for _, svc := range svcs {
		if svc.Spec.Selector == nil {
			continue // selects nothing
		}
		sel := labels.ValidatedSetSelector(svc.Spec.Selector)
		inCur := sel.Matches(labels.Set(cur))
		inOld := old != nil && sel.Matches(labels.Set(old))
		if (old == nil && inCur) || (old != nil && (both && (inCur || inOld) || !both && inCur != inOld)) {
			c.queue.AddAfter(svc.Namespace+"/"+svc.Name, c.batch)
		}
	}
}

func podOf(obj any) *corev1.Pod {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o
	case cache.DeletedFinalStateUnknown:
		if p, ok := o.Obj.(*corev1.Pod); ok {
			return p
		}
	}
	if obj != nil {
		utilruntime.HandleError(fmt.Errorf("endpointslice: pod event with a %T", obj))
	}
	return nil
}

func sliceOf(obj any) *discovery.EndpointSlice {
	switch o := obj.(type) {
	case *discovery.EndpointSlice:
		return o
	case cache.DeletedFinalStateUnknown:
		if s, ok := o.Obj.(*discovery.EndpointSlice); ok {
			return s
		}
	}
	utilruntime.HandleError(fmt.Errorf("endpointslice: EndpointSlice event with a %T", obj))
	return nil
}

// sliceEvents reacts to the EndpointSlice events of the slices one
// controller manages (managed-by label managedBy), as upstream's
// controllers do: it queues the owner (the Service, or the Endpoints
// object, of the slice's service-name label) with enqueue when someone
// else added, changed or deleted one of its slices, when a slice moved
// in or out of the controller's management, and (both owners) when a
// slice's service-name label changed. The tracker tells the
// controller's own writes apart.
type sliceEvents struct {
	managedBy string
	tracker   *sliceTracker
	enqueue   func(key string) // the owner's "namespace/name"
}

// afterDelay returns an enqueue function adding keys to q after delay.
func afterDelay(q workqueue.TypedRateLimitingInterface[string], delay time.Duration) func(string) {
	return func(key string) { q.AddAfter(key, delay) }
}

func (h sliceEvents) managed(s *discovery.EndpointSlice) bool {
	return s.Labels[discovery.LabelManagedBy] == h.managedBy
}

func (h sliceEvents) funcs() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if s := sliceOf(obj); s != nil && h.managed(s) && h.tracker.shouldSync(s) {
				h.queueOwner(s)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			prev, cur := sliceOf(oldObj), sliceOf(newObj)
			if prev == nil || cur == nil {
				return
			}
			if prev.Labels[discovery.LabelServiceName] != cur.Labels[discovery.LabelServiceName] {
				h.queueOwner(cur)
				h.queueOwner(prev)
				return
			}
			if h.managed(prev) != h.managed(cur) || h.managed(cur) && h.tracker.shouldSync(cur) {
				h.queueOwner(cur)
			}
		},
		DeleteFunc: func(obj any) {
			if s := sliceOf(obj); s != nil && h.managed(s) && h.tracker.has(s) && !h.tracker.handleDeletion(s) {
				h.queueOwner(s)
			}
		},
	}
}

func (h sliceEvents) queueOwner(s *discovery.EndpointSlice) {
	owner := s.Labels[discovery.LabelServiceName]
	if owner == "" {
		utilruntime.HandleError(fmt.Errorf("endpointslice: EndpointSlice %s/%s has no %s label", s.Namespace, s.Name, discovery.LabelServiceName))
		return
	}
	h.enqueue(s.Namespace + "/" + owner)
}

// onNodeUpdate refreshes zone capacity when a node's readiness or zone
// changes (a kubelet heartbeat changes neither).
func (c *Controller) onNodeUpdate(oldObj, newObj any) {
	o, ok1 := oldObj.(*corev1.Node)
	n, ok2 := newObj.(*corev1.Node)
	if !ok1 || !ok2 || adapter.NodeReady(o) != adapter.NodeReady(n) || o.Labels[corev1.LabelTopologyZone] != n.Labels[corev1.LabelTopologyZone] {
		c.topoQueue.Add(topologyQueueKey)
	}
}

func (c *Controller) topologyWorker(ctx context.Context) {
	work(ctx, c.topoQueue, func(ctx context.Context, _ string) { c.updateCapacity(ctx) })
}

// updateCapacity recomputes zone capacity from the nodes and queues the
// Services whose Auto hints it overloads.
func (c *Controller) updateCapacity(ctx context.Context) {
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Error listing Nodes")
		return
	}
	capacity := adapter.CapacityFromAPI(nodes)
	var overloaded []string
	c.mu.Lock()
	c.capacity = capacity
	for key, byType := range c.hints {
		for _, hbz := range byType {
			if capacity.Overloaded(hbz) {
				overloaded = append(overloaded, key)
				break
			}
		}
	}
	c.mu.Unlock()
	for _, key := range overloaded {
		c.queue.Add(key)
	}
}

// validLabelValue checks a label value as the API server does.
func validLabelValue(v string) error {
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
