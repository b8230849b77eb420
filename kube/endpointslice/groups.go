package endpointslice

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
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
// every bad endpoint by index and value, before anything is written, on:
// an endpoint without addresses; an address that is neither an IP nor a
// fully qualified domain name, or that looks like an IP and is not a
// valid one (10.0.0.300, 010.002.000.001, an IPv4-mapped IPv6 address);
// an address the API server refuses (unspecified, loopback, link-local);
// addresses of two types in one endpoint; an IP address type the Service
// does not have (see slicer.AddressTypesFor); a port outside 1..65535, a
// port name that is not "" or a DNS label (the rule of Service port
// names), two ports of one name, an unknown protocol; an invalid
// hostname or node name. FQDN endpoints are taken whatever the
// Service's IP families: a Writer with WriterOptions.FQDN writes them.
// Two endpoints with the same addresses, hostname and target are
// refused by Sync, as are port names the Service does not define.
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
		ep, at, ports, err := externalEndpoint(service, e)
		if err == nil && at != slicer.FQDN && !slices.Contains(types, at) {
			err = fmt.Errorf("address type %s is not one of the Service's %v", at, types)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("endpointslice: endpoints[%d] %v: %w", i, e.Addresses, err))
			continue
		}
		key := portSetKey(at, ports)
		gi, ok := index[key]
		if !ok {
			gi = len(groups)
			index[key] = gi
			groups = append(groups, slicer.Group{AddressType: at, Ports: ports})
		}
		groups[gi].Endpoints = append(groups[gi].Endpoints, ep)
	}
	if errs != nil {
		return nil, errors.Join(errs...)
	}
	return groups, nil
}

// externalEndpoint converts and checks one endpoint of GroupsFrom: the
// slicer endpoint, its address type and its ports (TCP where the
// protocol is empty).
func externalEndpoint(service *corev1.Service, e *ExternalEndpoint) (slicer.Endpoint, slicer.AddressType, []slicer.Port, error) {
	at, addrs, err := addressesOf(e.Addresses)
	if err != nil {
		return slicer.Endpoint{}, "", nil, err
	}
	ports := make([]slicer.Port, len(e.Ports))
	for j, p := range e.Ports {
		if p.Protocol == "" {
			p.Protocol = string(corev1.ProtocolTCP)
		}
		ports[j] = p
	}
	ep := slicer.Endpoint{
		Addresses: addrs, Hostname: e.Hostname, NodeName: e.NodeName, Zone: e.Zone,
		Conditions: slicer.PodConditions(e.Serving, e.Terminating, service.Spec.PublishNotReadyAddresses),
	}
	if r := e.TargetRef; r != nil {
		ep.TargetRef = slicer.ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: string(r.UID),
			APIVersion: r.APIVersion, ResourceVersion: r.ResourceVersion, FieldPath: r.FieldPath}
	}
	if errs := append(checkPorts(ports, ""), checkEndpoint(at, ep)...); errs != nil {
		return slicer.Endpoint{}, "", nil, errors.Join(errs...)
	}
	return ep, at, ports, nil
}

// checkPorts checks ports as the API server checks a slice's
// (slicer.Validate), and their numbers as 1..65535 (the API server takes
// an unset port, which the Writer's sources never mean). Each problem's
// path starts with prefix.
func checkPorts(ports []slicer.Port, prefix string) []error {
	var errs []error
	for j, p := range ports {
		if p.Port == 0 {
			errs = append(errs, fmt.Errorf("%sports[%d].port: 0 is not in 1..65535", prefix, j))
		}
	}
	return append(errs, validated(slicer.Slice{GenerateName: "probe-", AddressType: slicer.IPv4, Ports: ports}, prefix, "")...)
}

// checkEndpoint checks an endpoint of address type at as the API server
// checks it in a slice (slicer.Validate); the problems' paths start at
// its fields.
func checkEndpoint(at slicer.AddressType, ep slicer.Endpoint) []error {
	return validated(slicer.Slice{GenerateName: "probe-", AddressType: at, Endpoints: []slicer.Endpoint{ep}}, "", "endpoints[0].")
}

// validated returns slicer.Validate's problems of probe, each path with
// trim removed and prefix added.
func validated(probe slicer.Slice, prefix, trim string) []error {
	err := slicer.Validate(probe)
	if err == nil {
		return nil
	}
	var errs []error
	for _, e := range unjoin(err) {
		errs = append(errs, errors.New(prefix+strings.TrimPrefix(strings.TrimPrefix(e.Error(), "slicer: "), trim)))
	}
	return errs
}

// unjoin returns the errors joined in err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// addressesOf returns the address type of an endpoint's addresses and
// the addresses in canonical form. An address of digits and dots, or
// with a colon, is meant as an IP (no domain name has an all-numeric
// top-level label, or a colon) and must parse as one, without leading
// zeros, a zone, or an IPv4 address mapped into IPv6.
func addressesOf(in []string) (slicer.AddressType, []string, error) {
	if len(in) == 0 {
		return "", nil, errors.New("no addresses")
	}
	var at slicer.AddressType
	out := make([]string, len(in))
	for i, a := range in {
		t, canon, err := addressOf(a)
		if err != nil {
			return "", nil, err
		}
		if i > 0 && t != at {
			return "", nil, fmt.Errorf("addresses of types %s and %s", at, t)
		}
		at, out[i] = t, canon
	}
	return at, out, nil
}

// addressOf returns one address's type and canonical form.
func addressOf(a string) (slicer.AddressType, string, error) {
	if looksLikeIP(a) {
		ip, err := netip.ParseAddr(a)
		switch {
		case err != nil:
			return "", "", fmt.Errorf("address %q: not a valid IP address", a)
		case ip.Zone() != "":
			return "", "", fmt.Errorf("address %q: an IP address with a zone", a)
		case ip.Is4In6():
			return "", "", fmt.Errorf("address %q: an IPv4-mapped IPv6 address; write the IPv4 address", a)
		case ip.Is4():
			return slicer.IPv4, ip.String(), nil
		default:
			return slicer.IPv6, ip.String(), nil
		}
	}
	if errs := validation.IsFullyQualifiedDomainName(field.NewPath("address"), a); len(errs) > 0 {
		return "", "", fmt.Errorf("address %q: neither an IP nor a fully qualified domain name", a)
	}
	return slicer.FQDN, a, nil
}

// looksLikeIP reports whether a is meant as an IP address: it has a
// colon, or only digits and dots.
func looksLikeIP(a string) bool {
	if strings.Contains(a, ":") {
		return true
	}
	return a != "" && strings.Trim(a, "0123456789.") == ""
}
