package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/slicer"
)

// ServiceImports is the resource of mcs-api's ServiceImport, and
// serviceImportKind its kind: the owner of the slices written.
var (
	ServiceImports    = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceimports"}
	serviceImportKind = ServiceImports.GroupVersion().WithKind("ServiceImport")
)

// member is one member cluster's view: its EndpointSlices.
type member struct {
	name   string
	slices discoverylisters.EndpointSliceLister
}

// controller publishes the member clusters' endpoints of each imported
// Service as the local Service's EndpointSlices, owned by its
// ServiceImport, through an endpointslice.Writer.
type controller struct {
	name     string // the Writer's ControllerName
	writer   *endpointslice.Writer
	services corelisters.ServiceLister
	imports  cache.GenericLister
	members  []member // by name
	queue    workqueue.TypedRateLimitingInterface[string]
	synced   []cache.InformerSynced
}

// newController wires a Writer named name onto the local factory's
// informers, the ServiceImport informer of dyn, and the EndpointSlice
// informers of the members (by cluster name).
func newController(client clientset.Interface, factory informers.SharedInformerFactory, dyn dynamicinformer.DynamicSharedInformerFactory, members map[string]informers.SharedInformerFactory, name string) (*controller, error) {
	imports := dyn.ForResource(ServiceImports)
	c := &controller{
		name:     name,
		services: factory.Core().V1().Services().Lister(),
		imports:  imports.Lister(),
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
	slices := factory.Discovery().V1().EndpointSlices()
	w, err := endpointslice.NewWriter(client, slices, endpointslice.WriterOptions{
		ControllerName: name, Owner: c.ownerOf, Requeue: c.queue.Add,
	})
	if err != nil {
		return nil, err
	}
	c.writer = w
	byKey := cache.ResourceEventHandlerFuncs{AddFunc: c.enqueue, UpdateFunc: func(_, cur any) { c.enqueue(cur) }, DeleteFunc: c.enqueue}
	if err := c.watch(byKey, factory.Core().V1().Services().Informer(), imports.Informer()); err != nil {
		return nil, err
	}
	c.synced = append(c.synced, slices.Informer().HasSynced)
	bySvc := cache.ResourceEventHandlerFuncs{AddFunc: c.enqueueService, UpdateFunc: func(_, cur any) { c.enqueueService(cur) }, DeleteFunc: c.enqueueService}
	for _, m := range sortedKeys(members) {
		inf := members[m].Discovery().V1().EndpointSlices()
		if err := c.watch(bySvc, inf.Informer()); err != nil {
			return nil, fmt.Errorf("member %s: %w", m, err)
		}
		c.members = append(c.members, member{name: m, slices: inf.Lister()})
	}
	return c, nil
}

func (c *controller) watch(h cache.ResourceEventHandler, infs ...cache.SharedIndexInformer) error {
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return nil
}

// enqueue queues a local Service or ServiceImport by its key.
func (c *controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// enqueueService queues the Service a member's EndpointSlice belongs to.
func (c *controller) enqueueService(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if s, ok := obj.(*discovery.EndpointSlice); ok && s.Labels[discovery.LabelServiceName] != "" {
		c.queue.Add(s.Namespace + "/" + s.Labels[discovery.LabelServiceName])
	}
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
		if err := c.sync(ctx, key); err != nil { // ErrStaleInformer among them
			utilruntime.HandleErrorWithContext(ctx, err, "Syncing imported Service", "key", key)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// sync writes the slices of the local Service with this key from the
// members' endpoints, or deletes them when the Service or its
// ServiceImport is gone, or the Service has a selector
// (kube-controller-manager's then).
func (c *controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return c.writer.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
	if err != nil {
		return err
	}
	imp, err := c.serviceImport(ns, name)
	if apierrors.IsNotFound(err) || err == nil && svc.Spec.Selector != nil {
		return c.writer.Delete(ctx, svc)
	}
	if err != nil {
		return err
	}
	clusters, err := exportingClusters(imp)
	if err != nil {
		return fmt.Errorf("serviceimport %s: %w", key, err)
	}
	eps, err := c.endpointsFrom(ns, name, clusters)
	if err != nil {
		return err
	}
	groups, err := endpointslice.GroupsFrom(svc, eps)
	if err != nil {
		return fmt.Errorf("service %s: %w", key, err)
	}
	return c.writer.Sync(ctx, svc, groups)
}

func (c *controller) serviceImport(ns, name string) (*unstructured.Unstructured, error) {
	obj, err := c.imports.ByNamespace(ns).Get(name)
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("serviceimport %s/%s: unexpected %T", ns, name, obj)
	}
	return u, nil
}

// ownerOf is the Writer's Owner: a Service's slices belong to its
// ServiceImport.
func (c *controller) ownerOf(svc *corev1.Service) (endpointslice.SliceOwner, error) {
	imp, err := c.serviceImport(svc.Namespace, svc.Name)
	if err != nil {
		return endpointslice.SliceOwner{}, err
	}
	return endpointslice.SliceOwner{GroupVersionKind: serviceImportKind, Name: imp.GetName(), UID: imp.GetUID()}, nil
}

// exportingClusters returns the names in a ServiceImport's
// status.clusters[].cluster.
func exportingClusters(imp *unstructured.Unstructured) ([]string, error) {
	list, _, err := unstructured.NestedSlice(imp.Object, "status", "clusters")
	if err != nil {
		return nil, err
	}
	var out []string
	for i, e := range list {
		m, ok := e.(map[string]any)
		name, _ := m["cluster"].(string)
		if !ok || name == "" {
			return nil, fmt.Errorf("status.clusters[%d]: no cluster name", i)
		}
		out = append(out, name)
	}
	return out, nil
}

// endpointsFrom collects the endpoints of Service ns/name in the
// members that export it, in the order of the members' names and their
// slices' names. Slices this controller wrote itself in a member (when
// clusters import from each other) are skipped. An endpoint another
// cluster already gave with the same addresses and ports (overlapping
// Pod networks) is published once, from the first cluster, so the
// importing cluster never gets a duplicate address. A member's node
// names mean nothing here and are dropped; zones are kept, for
// trafficDistribution and topology hints.
func (c *controller) endpointsFrom(ns, name string, clusters []string) ([]endpointslice.ExternalEndpoint, error) {
	sel := labels.SelectorFromSet(labels.Set{discovery.LabelServiceName: name})
	seen := map[string]bool{}
	var out []endpointslice.ExternalEndpoint
	for _, m := range c.members {
		if !slices.Contains(clusters, m.name) {
			continue
		}
		list, err := m.slices.EndpointSlices(ns).List(sel)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", m.name, err)
		}
		slices.SortFunc(list, func(a, b *discovery.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
		for _, s := range list {
			if s.Labels[discovery.LabelManagedBy] == c.name {
				continue
			}
			ports := portsOf(s.Ports)
			for _, e := range s.Endpoints {
				key := fmt.Sprint(e.Addresses, ports)
				if seen[key] {
					continue
				}
				seen[key] = true
				out = append(out, endpointOf(e, ports))
			}
		}
	}
	return out, nil
}

// endpointOf converts a member's endpoint. Unset ready and terminating
// read as the API documents them (true and false); unset serving reads
// as ready, not as the documented true, so that an endpoint its cluster
// marks not ready (all an older producer sets) is not ready here too:
// readiness is what proxies route by.
func endpointOf(e discovery.Endpoint, ports []slicer.Port) endpointslice.ExternalEndpoint {
	ready := e.Conditions.Ready == nil || *e.Conditions.Ready
	serving := ready
	if e.Conditions.Serving != nil {
		serving = *e.Conditions.Serving
	}
	return endpointslice.ExternalEndpoint{
		Addresses:   e.Addresses,
		Ports:       ports,
		Serving:     serving,
		Terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
		Hostname:    deref(e.Hostname),
		Zone:        deref(e.Zone),
	}
}

func portsOf(in []discovery.EndpointPort) []slicer.Port {
	out := make([]slicer.Port, len(in))
	for i, p := range in {
		out[i] = slicer.Port{Name: deref(p.Name), Protocol: string(deref(p.Protocol)), AppProtocol: deref(p.AppProtocol)}
		if p.Port != nil {
			out[i].Port = *p.Port
		}
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
