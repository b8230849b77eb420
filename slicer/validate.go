package slicer

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/fairslice/fairslice/internal/k8sname"
)

// Validation limits of the API server (k8s.io/kubernetes v1.37.2,
// pkg/apis/discovery/validation).
const (
	MaxEndpoints        = 1000  // endpoints per slice
	MaxAddresses        = 100   // addresses per endpoint
	MaxPorts            = 20000 // ports per slice (the API doc still says 100)
	MaxHints            = 8     // zone hints, and node hints, per endpoint
	maxLabelValueLength = 63
)

// Validate checks s against the API server's validation of an
// EndpointSlice and returns every problem, each naming the field path and
// the bad value: the name (a DNS subdomain, or a generateName prefix), the
// address type (IPv4, IPv6 or FQDN), at most 1000 endpoints (beyond that
// they are not checked one by one), 1..100 addresses per endpoint in the
// syntax of the address type (IPs neither unspecified, loopback nor
// link-local), hostname a DNS label and node name a DNS subdomain, at most
// 8 unique zone and node hints, at most 20000 ports with unique names that
// are "" or DNS labels, protocols TCP, UDP or SCTP, port numbers 1..65535
// when set, and app protocols that are qualified names.
func Validate(s Slice) error {
	return errors.Join(validate(&s)...)
}

// validate returns every problem of s, or nil.
func validate(s *Slice) []error {
	var errs []error
	bad := func(path string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("slicer: %s: %s", path, fmt.Sprintf(format, args...)))
	}
	switch {
	case s.Name != "":
		if !k8sname.IsDNS1123Subdomain(s.Name) {
			bad("metadata.name", "%q is not a DNS subdomain", s.Name)
		}
	case s.GenerateName != "":
		if !k8sname.IsGenerateName(s.GenerateName) {
			bad("metadata.generateName", "%q is not a DNS subdomain prefix", s.GenerateName)
		}
	default:
		bad("metadata.name", "name or generateName is required")
	}
	switch s.AddressType {
	case IPv4, IPv6, FQDN:
	case "":
		bad("addressType", "required")
	default:
		bad("addressType", "%q is not one of IPv4, IPv6, FQDN", s.AddressType)
	}
	if len(s.Endpoints) > MaxEndpoints {
		bad("endpoints", "%d endpoints, at most %d", len(s.Endpoints), MaxEndpoints)
	} else {
		for i := range s.Endpoints {
			validateEndpoint(&s.Endpoints[i], s.AddressType, fmt.Sprintf("endpoints[%d]", i), bad)
		}
	}
	if len(s.Ports) > MaxPorts {
		bad("ports", "%d ports, at most %d", len(s.Ports), MaxPorts)
	} else {
		seen := map[string]bool{}
		for i, p := range s.Ports {
			path := fmt.Sprintf("ports[%d]", i)
			if p.Name != "" && !k8sname.IsDNS1123Label(p.Name) {
				bad(path+".name", "%q is not a DNS label", p.Name)
			}
			if seen[p.Name] {
				bad(path+".name", "%q is a duplicate", p.Name)
			}
			seen[p.Name] = true
			switch p.Protocol {
			case "TCP", "UDP", "SCTP":
			case "":
				bad(path+".protocol", "required")
			default:
				bad(path+".protocol", "%q is not one of TCP, UDP, SCTP", p.Protocol)
			}
			if p.Port != 0 && (p.Port < 1 || p.Port > 65535) {
				bad(path+".port", "%d is not in 1..65535", p.Port)
			}
			if p.AppProtocol != "" && !k8sname.IsQualifiedName(p.AppProtocol) {
				bad(path+".appProtocol", "%q is not a qualified name", p.AppProtocol)
			}
		}
	}
	return errs
}

func validateEndpoint(e *Endpoint, at AddressType, path string, bad func(string, string, ...any)) {
	switch n := len(e.Addresses); {
	case n == 0:
		bad(path+".addresses", "at least one address is required")
	case n > MaxAddresses:
		bad(path+".addresses", "%d addresses, at most %d", n, MaxAddresses)
	}
	for j, a := range e.Addresses {
		if err := validateAddress(a, at); err != nil {
			bad(fmt.Sprintf("%s.addresses[%d]", path, j), "%q %v", a, err)
		}
	}
	if e.Hostname != "" && !k8sname.IsDNS1123Label(e.Hostname) {
		bad(path+".hostname", "%q is not a DNS label", e.Hostname)
	}
	if e.NodeName != "" && !k8sname.IsDNS1123Subdomain(e.NodeName) {
		bad(path+".nodeName", "%q is not a valid node name", e.NodeName)
	}
	if e.Hints == nil {
		return
	}
	check := func(field string, names []string, valid func(string) bool, what string) {
		if len(names) > MaxHints {
			bad(path+".hints."+field, "%d hints, at most %d", len(names), MaxHints)
			return
		}
		seen := map[string]bool{}
		for k, z := range names {
			p := fmt.Sprintf("%s.hints.%s[%d].name", path, field, k)
			if !valid(z) {
				bad(p, "%q is not a valid %s", z, what)
			}
			if seen[z] {
				bad(p, "%q is a duplicate", z)
			}
			seen[z] = true
		}
	}
	check("forZones", e.Hints.ForZones, k8sname.IsLabelValue, "label value")
	check("forNodes", e.Hints.ForNodes, k8sname.IsDNS1123Subdomain, "node name")
}

// validateAddress checks an address's syntax for its type.
func validateAddress(a string, at AddressType) error {
	switch at {
	case IPv4, IPv6:
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.Zone() != "" {
			if at == IPv4 {
				if _, ok := legacyIPv4(a); ok {
					return nil // leading zeros, accepted for compatibility
				}
			}
			return fmt.Errorf("is not a valid IP address")
		}
		if (at == IPv4) != (ip.Is4() || ip.Is4In6()) {
			return fmt.Errorf("is not an %s address", at)
		}
		ip = ip.Unmap()
		switch {
		case ip.IsUnspecified():
			return fmt.Errorf("may not be unspecified (0.0.0.0 or ::)")
		case ip.IsLoopback():
			return fmt.Errorf("may not be in the loopback range")
		case ip.IsLinkLocalUnicast():
			return fmt.Errorf("may not be in the link-local range")
		case ip.IsLinkLocalMulticast():
			return fmt.Errorf("may not be in the link-local multicast range")
		}
	case FQDN:
		if !isFQDN(a) {
			return fmt.Errorf("is not a fully qualified domain name")
		}
	}
	return nil
}

// legacyIPv4 parses a dotted quad whose parts may have leading zeros.
func legacyIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, p := range parts {
		if p == "" || len(p) > 3 {
			return netip.Addr{}, false
		}
		n := 0
		for _, c := range []byte(p) {
			if c < '0' || c > '9' {
				return netip.Addr{}, false
			}
			n = n*10 + int(c-'0')
		}
		if n > 255 {
			return netip.Addr{}, false
		}
		b[i] = byte(n)
	}
	return netip.AddrFrom4(b), true
}

// isFQDN reports whether s (a trailing dot allowed) is a DNS subdomain of
// at least two labels, each at most 63 characters.
func isFQDN(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if !k8sname.IsDNS1123Subdomain(s) || !strings.Contains(s, ".") {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if len(l) > 63 {
			return false
		}
	}
	return true
}
