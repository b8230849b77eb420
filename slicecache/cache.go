package slicecache

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fairslice/fairslice/slicer"
)

// Options configure a Cache. The zero value is an IPv4 cache for a
// consumer that is not on any node.
type Options struct {
	// AddressType is the one address type the cache keeps: IPv4 (the
	// default when empty), IPv6 or FQDN. Slices of other types are
	// ignored, as kube-proxy's tracker for one IP family ignores them.
	AddressType slicer.AddressType
	// NodeName is the node the consumer runs on: its endpoints are Local.
	// Empty means no endpoint is local.
	NodeName string
}

// Slice is an EndpointSlice as a consumer receives it: the slice and the
// resourceVersion the API server gave it.
type Slice struct {
	slicer.Slice
	// ResourceVersion is the object's metadata.resourceVersion. Two
	// versions of a slice with the same content and resourceVersion are
	// the same (an informer's resync); any difference is a change.
	ResourceVersion string
}

// ServiceName names a Service.
type ServiceName struct {
	Namespace, Name string
}

// String returns "namespace/name".
func (n ServiceName) String() string { return n.Namespace + "/" + n.Name }

// PortName is a service port as kube-proxy names it: the port's name
// ("" for an unnamed port) and protocol.
type PortName struct {
	Name, Protocol string
}

// Endpoint is one merged endpoint of a service port: kube-proxy's view of
// it, plus what the winning copy says about where it runs.
type Endpoint struct {
	// Address is the endpoint's first address, normalised (see the
	// package doc).
	Address string
	// Port is the port number, from the slice the endpoint came from.
	Port int32
	// Ready, Serving and Terminating are the conditions as kube-proxy
	// reads them: unset Ready and Serving are true, unset Terminating is
	// false.
	Ready, Serving, Terminating bool
	// Local is whether NodeName is the cache's NodeName.
	Local bool
	// NodeName, Zone and Hostname are the endpoint's, "" when unset.
	NodeName, Zone, Hostname string
	// TargetRef is the endpoint's target (usually its Pod), nil for
	// none; shared with the slice it came from: read-only.
	TargetRef *slicer.ObjectRef
	// Hints are the endpoint's topology hints, shared with the slice it
	// came from: read-only.
	Hints *slicer.Hints
}

// Equal reports whether e and o are the same in every field, hints by
// value.
func (e *Endpoint) Equal(o *Endpoint) bool {
	if e.Address != o.Address || e.Port != o.Port || e.Ready != o.Ready || e.Serving != o.Serving ||
		e.Terminating != o.Terminating || e.Local != o.Local || e.NodeName != o.NodeName ||
		e.Zone != o.Zone || e.Hostname != o.Hostname {
		return false
	}
	if (e.TargetRef == nil) != (o.TargetRef == nil) || (e.TargetRef != nil && *e.TargetRef != *o.TargetRef) {
		return false
	}
	return hintsEqual(e.Hints, o.Hints)
}

func hintsEqual(a, b *slicer.Hints) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.Equal(a.ForZones, b.ForZones) && slices.Equal(a.ForNodes, b.ForNodes)
}

// Cache merges EndpointSlices into endpoints per service port. See the
// package doc for the model, the cost of each method and how it differs
// from kube-proxy. The zero value is not usable; call New.
type Cache struct {
	opts     Options
	services map[ServiceName]*service
	// pending lists the Services with a change recorded since the last
	// Checkout, each once.
	pending []*service
	// seq numbers the slice versions recorded, so that the most recent
	// copy of a duplicated endpoint wins.
	seq uint64
}

// New returns an empty Cache. It fails on an unknown address type.
func New(opts Options) (*Cache, error) {
	switch opts.AddressType {
	case "":
		opts.AddressType = slicer.IPv4
	case slicer.IPv4, slicer.IPv6, slicer.FQDN:
	default:
		return nil, fmt.Errorf("slicecache: Options.AddressType: %q is not IPv4, IPv6 or FQDN", opts.AddressType)
	}
	return &Cache{opts: opts, services: map[ServiceName]*service{}}, nil
}

// AddressType returns the address type the cache keeps.
func (c *Cache) AddressType() slicer.AddressType { return c.opts.AddressType }

// service is what the cache knows of one Service.
type service struct {
	name ServiceName
	// slices are the latest versions recorded, by slice name. A slice
	// deleted since the last Checkout stays, marked removed, until then.
	slices map[string]*sliceVersion
	// changed lists the slice names recorded since the last Checkout.
	changed []string
	pending bool
	ports   map[PortName]*port
}

// sliceVersion is one version of a slice: the latest recorded, and the
// one applied at the last Checkout.
type sliceVersion struct {
	latest        *Slice
	latestRemoved bool
	// applied is the version the merged endpoints hold (nil: none).
	applied *Slice
	// seq orders latest among all versions recorded by the cache.
	seq uint64
	// queued is whether the name is in its Service's changed list.
	queued bool
}

// sliceKeys returns the Service a slice belongs to, or ok false for a
// slice without the service-name label, a name or a namespace, which
// kube-proxy ignores.
func sliceKeys(s *Slice) (ServiceName, bool) {
	svc := s.Labels[slicer.LabelServiceName]
	if svc == "" || s.Name == "" || s.Namespace == "" {
		return ServiceName{}, false
	}
	return ServiceName{Namespace: s.Namespace, Name: svc}, true
}

// Update records s, a slice added or updated, and reports whether it
// differs from the latest version recorded for its name (a change that
// the next Checkout applies). A slice of another address type, or without
// a name, a namespace or the kubernetes.io/service-name label, is ignored
// and reported unchanged. The cache keeps s: do not modify it afterwards.
// O(endpoints of s).
func (c *Cache) Update(s *Slice) bool { return c.record(s, false) }

// Delete records that s was deleted and reports whether that is a change:
// it is not when the cache holds no version of s, or already holds this
// deletion. O(endpoints of s).
func (c *Cache) Delete(s *Slice) bool { return c.record(s, true) }

func (c *Cache) record(s *Slice, remove bool) bool {
	if s == nil || s.AddressType != c.opts.AddressType {
		return false
	}
	name, ok := sliceKeys(s)
	if !ok {
		return false
	}
	svc := c.services[name]
	var v *sliceVersion
	if svc != nil {
		v = svc.slices[s.Name]
	}
	if v == nil {
		if remove {
			return false
		}
		if svc == nil {
			svc = &service{name: name, slices: map[string]*sliceVersion{}, ports: map[PortName]*port{}}
			c.services[name] = svc
		}
		v = &sliceVersion{}
		svc.slices[s.Name] = v
	} else if v.latestRemoved == remove && sameSlice(v.latest, s) {
		return false
	}
	if !v.queued {
		v.queued = true
		svc.changed = append(svc.changed, s.Name)
	}
	c.seq++
	v.latest, v.latestRemoved, v.seq = s, remove, c.seq
	if !svc.pending {
		svc.pending = true
		c.pending = append(c.pending, svc)
	}
	return true
}

// sameSlice reports whether two versions of a slice are equal: the same
// resourceVersion and the same content.
func sameSlice(a, b *Slice) bool {
	if a == b {
		return true
	}
	if a.ResourceVersion != b.ResourceVersion || a.Name != b.Name || a.GenerateName != b.GenerateName ||
		a.Namespace != b.Namespace || a.AddressType != b.AddressType {
		return false
	}
	return slices.Equal(a.Ports, b.Ports) &&
		slices.EqualFunc(a.Endpoints, b.Endpoints, endpointEqual) &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		slices.Equal(a.Owners, b.Owners)
}

func endpointEqual(a, b slicer.Endpoint) bool {
	return slices.Equal(a.Addresses, b.Addresses) && a.Hostname == b.Hostname && a.NodeName == b.NodeName &&
		a.Zone == b.Zone && a.Conditions == b.Conditions && a.TargetRef == b.TargetRef && hintsEqual(a.Hints, b.Hints)
}
