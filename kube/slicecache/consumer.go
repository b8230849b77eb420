// Package slicecache feeds the core slicecache.Cache from a discovery/v1
// EndpointSlice informer: it is what a controller that watched Endpoints
// objects switches to, getting kube-proxy's merged, deduplicated view of
// each Service's endpoints and what changed since it last looked.
//
//	c, _ := slicecache.NewConsumer(slicecache.Options{NodeName: node})
//	factory.Discovery().V1().EndpointSlices().Informer().AddEventHandler(c)
//	for range c.Changed() {
//		for _, ch := range c.Checkout() { /* reprogram ch.Service */ }
//	}
//
// FromAPI converts one object; Consumer is a Cache behind a mutex that
// implements client-go's ResourceEventHandler, and ForNode applies
// kube-proxy's endpoint selection (package topology) for one node.
// kube/verify/compare/slicecache checks the whole path against kube-proxy's
// EndpointsChangeTracker.
package slicecache

import (
	"sync"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/slicecache"
	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// FromAPI converts an EndpointSlice to the core's slice. Nil pointers
// become zero values, except that a port without a name is dropped
// (kube-proxy ignores it; the API server defaults the name to "") and a
// nil protocol is TCP (the API default). Addresses, labels, annotations
// and hint lists are shared with the object, which informers never
// modify.
func FromAPI(s *discovery.EndpointSlice) *slicecache.Slice {
	out := &slicecache.Slice{ResourceVersion: s.ResourceVersion, Slice: slicer.Slice{
		Name: s.Name, GenerateName: s.GenerateName, Namespace: s.Namespace,
		AddressType: slicer.AddressType(s.AddressType),
		Ports:       make([]slicer.Port, 0, len(s.Ports)),
		Endpoints:   make([]slicer.Endpoint, len(s.Endpoints)),
		Labels:      s.Labels, Annotations: s.Annotations,
	}}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Name == nil {
			continue
		}
		sp := slicer.Port{Name: *p.Name, Protocol: "TCP"}
		if p.Port != nil {
			sp.Port = *p.Port
		}
		if p.Protocol != nil {
			sp.Protocol = string(*p.Protocol)
		}
		if p.AppProtocol != nil {
			sp.AppProtocol = *p.AppProtocol
		}
		out.Ports = append(out.Ports, sp)
	}
	for _, o := range s.OwnerReferences {
		out.Owners = append(out.Owners, slicer.OwnerRef{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name,
			UID: string(o.UID), Controller: o.Controller != nil && *o.Controller,
			BlockOwnerDeletion: o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion})
	}
	for i := range s.Endpoints {
		out.Endpoints[i] = endpointFromAPI(&s.Endpoints[i])
	}
	return out
}

// endpointFromAPI converts an endpoint: what topology reads, plus the
// hostname and target reference.
func endpointFromAPI(e *discovery.Endpoint) slicer.Endpoint {
	out := adapter.EndpointFromAPI(e)
	if e.Hostname != nil {
		out.Hostname = *e.Hostname
	}
	if r := e.TargetRef; r != nil {
		out.TargetRef = slicer.ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: string(r.UID),
			APIVersion: r.APIVersion, ResourceVersion: r.ResourceVersion, FieldPath: r.FieldPath}
	}
	return out
}

// Options configure a Consumer. The zero value keeps IPv4 slices for a
// consumer on no node.
type Options struct {
	// AddressType is the address type kept: IPv4 (when empty), IPv6 or
	// FQDN. A dual-stack consumer runs one Consumer per family, as
	// kube-proxy runs one tracker per family.
	AddressType discovery.AddressType
	// NodeName is the node the consumer runs on (kube-proxy's
	// --hostname-override): its endpoints are Local.
	NodeName string
}

// Consumer is a slicecache.Cache fed by an EndpointSlice informer. It is
// safe for concurrent use: the informer's handler goroutine records
// events while the consumer's own loop checks them out.
type Consumer struct {
	mu      sync.Mutex
	cache   *slicecache.Cache
	node    string
	changed chan struct{}
}

var _ cache.ResourceEventHandler = (*Consumer)(nil)

// NewConsumer returns a Consumer. It fails on an unknown address type.
func NewConsumer(opts Options) (*Consumer, error) {
	c, err := slicecache.New(slicecache.Options{AddressType: slicer.AddressType(opts.AddressType), NodeName: opts.NodeName})
	if err != nil {
		return nil, err
	}
	return &Consumer{cache: c, node: opts.NodeName, changed: make(chan struct{}, 1)}, nil
}

// Update records an added or updated slice and reports whether it is a
// change (see slicecache.Cache.Update).
func (c *Consumer) Update(s *discovery.EndpointSlice) bool { return c.record(s, false) }

// Delete records a deleted slice and reports whether it is a change.
func (c *Consumer) Delete(s *discovery.EndpointSlice) bool { return c.record(s, true) }

func (c *Consumer) record(s *discovery.EndpointSlice, remove bool) bool {
	if s == nil || s.AddressType != c.AddressType() {
		return false
	}
	cs := FromAPI(s)
	c.mu.Lock()
	var changed bool
	if remove {
		changed = c.cache.Delete(cs)
	} else {
		changed = c.cache.Update(cs)
	}
	c.mu.Unlock()
	if changed {
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	return changed
}

// AddressType returns the address type the Consumer keeps.
func (c *Consumer) AddressType() discovery.AddressType {
	return discovery.AddressType(c.cache.AddressType())
}

// OnAdd implements cache.ResourceEventHandler.
func (c *Consumer) OnAdd(obj any, _ bool) {
	if s, ok := obj.(*discovery.EndpointSlice); ok {
		c.Update(s)
	}
}

// OnUpdate implements cache.ResourceEventHandler.
func (c *Consumer) OnUpdate(_, obj any) {
	if s, ok := obj.(*discovery.EndpointSlice); ok {
		c.Update(s)
	}
}

// OnDelete implements cache.ResourceEventHandler, including the
// tombstone an informer delivers for a deletion it missed.
func (c *Consumer) OnDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if s, ok := obj.(*discovery.EndpointSlice); ok {
		c.Delete(s)
	}
}

// Changed returns a channel that receives a value after a change is
// recorded; several changes may be signalled once. Call Checkout when it
// fires.
func (c *Consumer) Changed() <-chan struct{} { return c.changed }

// Checkout applies the changes recorded since the last Checkout and
// returns them per Service (see slicecache.Cache.Checkout).
func (c *Consumer) Checkout() []slicecache.Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cache.Checkout()
}

// Endpoints returns the merged endpoints of a service port as of the last
// Checkout, sorted; the list is shared and read-only.
func (c *Consumer) Endpoints(svc slicecache.ServiceName, port slicecache.PortName) []slicecache.Endpoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cache.Endpoints(svc, port)
}

// Ports returns the service ports of svc that have endpoints.
func (c *Consumer) Ports(svc slicecache.ServiceName) []slicecache.PortName {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cache.Ports(svc)
}

// NodeSelection is the endpoints a node's kube-proxy uses for a service
// port: Selection's indexes point into Endpoints.
type NodeSelection struct {
	Endpoints []slicecache.Endpoint
	topology.Selection
}

// Cluster returns the endpoints for cluster-wide traffic.
func (s *NodeSelection) Cluster() []slicecache.Endpoint { return s.pick(s.Selection.Cluster) }

// Local returns the node's own endpoints for Local traffic policies.
func (s *NodeSelection) Local() []slicecache.Endpoint { return s.pick(s.Selection.Local) }

// Reachable returns every endpoint some traffic to the node can reach.
func (s *NodeSelection) Reachable() []slicecache.Endpoint { return s.pick(s.Selection.Reachable) }

func (s *NodeSelection) pick(idx []int) []slicecache.Endpoint {
	if idx == nil {
		return nil
	}
	out := make([]slicecache.Endpoint, len(idx))
	for i, j := range idx {
		out[i] = s.Endpoints[j]
	}
	return out
}

// ForNode returns the endpoints that the consumer's node (Options.NodeName)
// in zone uses for a service port with traffic policy p, as kube-proxy's
// CategorizeEndpoints chooses them (topology.SelectEndpoints). O(endpoints
// of the port).
func (c *Consumer) ForNode(svc slicecache.ServiceName, port slicecache.PortName, p topology.TrafficPolicy, zone string) NodeSelection {
	eps := c.Endpoints(svc, port)
	in := make([]topology.Endpoint, len(eps))
	for i := range eps {
		e := &eps[i]
		in[i] = topology.Endpoint{Addresses: []string{e.Address}, NodeName: e.NodeName, Zone: e.Zone, Hints: e.Hints,
			Conditions: slicer.Conditions{Ready: slicer.TristateOf(e.Ready), Serving: slicer.TristateOf(e.Serving), Terminating: slicer.TristateOf(e.Terminating)}}
	}
	return NodeSelection{Endpoints: eps, Selection: topology.SelectEndpoints(in, p, c.node, zone)}
}
