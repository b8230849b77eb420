package main

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

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

// controller is the endpointslice.Source of the member clusters'
// endpoints of each imported Service, to be published as the local
// Service's EndpointSlices, owned by its ServiceImport.
type controller struct {
	name     string // the Writer's ControllerName
	services corelisters.ServiceLister
	imports  cache.GenericLister
	members  []member // by name
}

// newController returns an endpointslice.WriterController with opts
// (the Writer's Owner set to the ServiceImport) on the local factory's
// informers, the ServiceImport informer of dyn, and the EndpointSlice
// informers of the members (by cluster name), whose events it is fed by.
func newController(client clientset.Interface, factory informers.SharedInformerFactory, dyn dynamicinformer.DynamicSharedInformerFactory,
	members map[string]informers.SharedInformerFactory, opts endpointslice.WriterControllerOptions) (*endpointslice.WriterController, error) {
	imports := dyn.ForResource(ServiceImports)
	src := &controller{name: opts.Writer.ControllerName, services: factory.Core().V1().Services().Lister(), imports: imports.Lister()}
	infs := []cache.SharedIndexInformer{factory.Core().V1().Services().Informer(), imports.Informer()}
	for _, m := range sortedKeys(members) {
		inf := members[m].Discovery().V1().EndpointSlices()
		src.members = append(src.members, member{name: m, slices: inf.Lister()})
		infs = append(infs, inf.Informer())
	}
	for _, inf := range infs {
		opts.WaitFor = append(opts.WaitFor, inf.HasSynced)
	}
	opts.Writer.Owner = src.ownerOf
	c, err := endpointslice.NewWriterController(client, factory.Discovery().V1().EndpointSlices(), src, opts)
	if err != nil {
		return nil, err
	}
	byKey := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.Changed(key)
		}
	}
	bySvc := func(obj any) { // a member's slice: its Service
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if s, ok := obj.(*discovery.EndpointSlice); ok && s.Labels[discovery.LabelServiceName] != "" {
			c.Changed(s.Namespace + "/" + s.Labels[discovery.LabelServiceName])
		}
	}
	for i, inf := range infs {
		f := byKey
		if i >= 2 {
			f = bySvc
		}
		h := cache.ResourceEventHandlerFuncs{AddFunc: f, UpdateFunc: func(_, cur any) { f(cur) }, DeleteFunc: f}
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Keys lists the ServiceImports.
func (c *controller) Keys() ([]string, error) {
	list, err := c.imports.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, obj := range list {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			keys = append(keys, key)
		}
	}
	return keys, nil
}

// Desired returns the local Service with this key and the members'
// endpoints, or no Service (its slices are deleted) when the Service or
// its ServiceImport is gone, or the Service has a selector
// (kube-controller-manager's then).
func (c *controller) Desired(key string) (*corev1.Service, []slicer.Group, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, nil, err
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	imp, err := c.serviceImport(ns, name)
	if apierrors.IsNotFound(err) || err == nil && svc.Spec.Selector != nil {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	clusters, err := exportingClusters(imp)
	if err != nil {
		return nil, nil, fmt.Errorf("serviceimport %s: %w", key, err)
	}
	eps, err := c.endpointsFrom(ns, name, clusters)
	if err != nil {
		return nil, nil, err
	}
	groups, err := endpointslice.GroupsFrom(svc, eps)
	if err != nil {
		return nil, nil, fmt.Errorf("service %s: %w", key, err)
	}
	return svc, groups, nil
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
