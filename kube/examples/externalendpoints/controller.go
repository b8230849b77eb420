package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/slicer"
)

// LabelSource marks a ConfigMap as the endpoint list of the selectorless
// Service of the same name and namespace.
const LabelSource = "externalendpoints.fairslice.example/source"

// DataKey is the ConfigMap key holding the list: one address per line,
// optionally followed by "notready"; blank lines and lines starting with
// # are ignored.
const DataKey = "addresses"

// controller turns labelled ConfigMaps into the EndpointSlices of their
// Services through an endpointslice.Writer.
type controller struct {
	writer     *endpointslice.Writer
	services   corelisters.ServiceLister
	configMaps corelisters.ConfigMapLister
	queue      workqueue.TypedRateLimitingInterface[string]
	synced     []cache.InformerSynced
}

// newController wires a Writer named name, and the Service and ConfigMap
// handlers, onto factory's informers.
func newController(client clientset.Interface, factory informers.SharedInformerFactory, name string) (*controller, error) {
	c := &controller{
		services:   factory.Core().V1().Services().Lister(),
		configMaps: factory.Core().V1().ConfigMaps().Lister(),
		queue:      workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
	slices := factory.Discovery().V1().EndpointSlices()
	w, err := endpointslice.NewWriter(client, slices, endpointslice.WriterOptions{ControllerName: name, Requeue: c.queue.Add})
	if err != nil {
		return nil, err
	}
	c.writer = w
	queue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: queue, UpdateFunc: func(_, cur any) { queue(cur) }, DeleteFunc: queue}
	for _, inf := range []cache.SharedIndexInformer{factory.Core().V1().Services().Informer(), factory.Core().V1().ConfigMaps().Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	c.synced = append(c.synced, slices.Informer().HasSynced)
	return c, nil
}

// run syncs queued Services with workers workers until ctx ends.
func (c *controller) run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker, time.Second) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *controller) worker(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		err := c.sync(ctx, key)
		var held *endpointslice.HeldError
		switch {
		case err == nil:
			c.queue.Forget(key)
		case errors.As(err, &held):
			c.queue.AddAfter(key, held.RetryAfter)
		default: // ErrStaleInformer among them: retry with backoff
			utilruntime.HandleErrorWithContext(ctx, err, "Syncing external endpoints", "key", key)
			c.queue.AddRateLimited(key)
		}
		c.queue.Done(key)
	}
}

// sync writes the slices of the Service with this key from its
// ConfigMap, or deletes them when either is gone, the ConfigMap lost its
// label, or the Service has a selector (kube-controller-manager's then).
func (c *controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	gone := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return c.writer.Delete(ctx, gone)
	}
	if err != nil {
		return err
	}
	cm, err := c.configMaps.ConfigMaps(ns).Get(name)
	if apierrors.IsNotFound(err) || err == nil && (cm.Labels[LabelSource] != "true" || svc.Spec.Selector != nil) {
		return c.writer.Delete(ctx, svc)
	}
	if err != nil {
		return err
	}
	eps, err := parseAddresses(cm.Data[DataKey], portsOf(svc))
	if err != nil {
		return fmt.Errorf("ConfigMap %s: %w", key, err)
	}
	groups, err := endpointslice.GroupsFrom(svc, eps)
	if err != nil {
		return fmt.Errorf("ConfigMap %s: %w", key, err)
	}
	return c.writer.Sync(ctx, svc, groups)
}

// portsOf returns the ports the endpoints serve: each Service port's
// numeric target port (its port when the target is unset).
func portsOf(svc *corev1.Service) []slicer.Port {
	var out []slicer.Port
	for _, p := range svc.Spec.Ports {
		port := p.Port
		if p.TargetPort.IntValue() > 0 {
			port = int32(p.TargetPort.IntValue())
		}
		out = append(out, slicer.Port{Name: p.Name, Port: port, Protocol: string(p.Protocol), AppProtocol: deref(p.AppProtocol)})
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// parseAddresses reads the ConfigMap's list (see DataKey), reporting
// every bad line.
func parseAddresses(data string, ports []slicer.Port) ([]endpointslice.ExternalEndpoint, error) {
	var out []endpointslice.ExternalEndpoint
	var errs []error
	for i, line := range strings.Split(data, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		serving := true
		switch {
		case len(fields) == 2 && fields[1] == "notready":
			serving = false
		case len(fields) > 1:
			errs = append(errs, fmt.Errorf("line %d %q: want an address, optionally followed by notready", i+1, line))
			continue
		}
		out = append(out, endpointslice.ExternalEndpoint{Addresses: []string{fields[0]}, Ports: ports, Serving: serving})
	}
	return out, errors.Join(errs...)
}
