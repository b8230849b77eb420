package endpointslice

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fairslice/fairslice/slicer"
)

// ExternalEndpoint is one endpoint of a source that is not a Pod (a
// virtual machine, a host in another cluster), as GroupsFrom takes it.
type ExternalEndpoint struct {
	// Addresses are the endpoint's addresses, all IPv4, all IPv6 or all
	// FQDN (in practice one); IPs are written in canonical form.
	Addresses []string
	// Ports are the ports it serves the Service on; endpoints with the
	// same ports (as a set) share slices. An empty Protocol means TCP,
	// as the API server defaults it.
	Ports []slicer.Port
	// Serving is whether it passes its health check; Terminating
	// whether it is going away. Ready is derived from them as for pods:
	// serving and not terminating, or always with the Service's
	// publishNotReadyAddresses.
	Serving, Terminating bool
	// Hostname, NodeName and Zone are the endpoint's, "" for none. Zone
	// is what trafficDistribution and Auto hints place it by.
	Hostname, NodeName, Zone string
	// TargetRef is the object behind the endpoint, if any.
	TargetRef *corev1.ObjectReference
}

// GroupsFrom turns a source's endpoints for service into the groups
// Writer.Sync takes: one per address type and port set, in the order
// each first appears, the endpoints in the order given. It fails, naming
// every bad endpoint by index and value, on an endpoint without
// addresses, an address that is neither an IP nor a fully qualified
// domain name, addresses of two types in one endpoint, and an address
// type the Service does not have (see slicer.AddressTypesFor). Two
// endpoints with the same addresses, hostname and target are refused by
// Sync.
func GroupsFrom(service *corev1.Service, endpoints []ExternalEndpoint) ([]slicer.Group, error) {
	if service == nil {
		return nil, errors.New("endpointslice: GroupsFrom: service is nil")
	}
	types := ServiceFacts(service, time.Time{}).AddressTypes
	var groups []slicer.Group
	index := map[string]int{}
	var errs []error
	for i := range endpoints {
		e := &endpoints[i]
		at, addrs, err := addressesOf(e.Addresses)
		if err == nil && !slices.Contains(types, at) {
			err = fmt.Errorf("address type %s is not one of the Service's %v", at, types)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("endpointslice: endpoints[%d] %v: %w", i, e.Addresses, err))
			continue
		}
		ports := make([]slicer.Port, len(e.Ports))
		for j, p := range e.Ports {
			if p.Protocol == "" {
				p.Protocol = string(corev1.ProtocolTCP)
			}
			ports[j] = p
		}
		key := portSetKey(at, ports)
		gi, ok := index[key]
		if !ok {
			gi = len(groups)
			index[key] = gi
			groups = append(groups, slicer.Group{AddressType: at, Ports: ports})
		}
		ep := slicer.Endpoint{
			Addresses: addrs, Hostname: e.Hostname, NodeName: e.NodeName, Zone: e.Zone,
			Conditions: slicer.PodConditions(e.Serving, e.Terminating, service.Spec.PublishNotReadyAddresses),
		}
		if r := e.TargetRef; r != nil {
			ep.TargetRef = slicer.ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: string(r.UID),
				APIVersion: r.APIVersion, ResourceVersion: r.ResourceVersion, FieldPath: r.FieldPath}
		}
		groups[gi].Endpoints = append(groups[gi].Endpoints, ep)
	}
	if errs != nil {
		return nil, errors.Join(errs...)
	}
	return groups, nil
}

// addressesOf returns the address type of an endpoint's addresses and
// the addresses in canonical form.
func addressesOf(in []string) (slicer.AddressType, []string, error) {
	if len(in) == 0 {
		return "", nil, errors.New("no addresses")
	}
	var at slicer.AddressType
	out := make([]string, len(in))
	for i, a := range in {
		t, canon := slicer.FQDN, a
		if ip, err := netip.ParseAddr(a); err == nil && ip.Zone() == "" && !ip.Is4In6() {
			t, canon = slicer.IPv4, ip.String()
			if ip.Is6() {
				t = slicer.IPv6
			}
		} else if errs := validation.IsFullyQualifiedDomainName(field.NewPath("address"), a); len(errs) > 0 {
			return "", nil, fmt.Errorf("address %q: neither an IP nor a fully qualified domain name", a)
		}
		if i > 0 && t != at {
			return "", nil, fmt.Errorf("addresses of types %s and %s", at, t)
		}
		at, out[i] = t, canon
	}
	return at, out, nil
}
