package slicecache

import (
	"net/netip"
	"strings"

	"github.com/fairslice/fairslice/slicer"
)

// normalize returns the key of an address in a cache of type t, or ok
// false for an address that kube-proxy could not parse as an IP.
//
// kube-proxy parses with k8s.io/utils' ParseIPSloppy, Go's pre-1.17
// parser: the first '.' or ':' decides between IPv4 and IPv6, and IPv4
// octets may have leading zeros, read as decimal. It then prints the IP
// with net.IP's String: IPv4-mapped IPv6 addresses print as IPv4.
func normalize(t slicer.AddressType, a string) (string, bool) {
	if t == slicer.FQDN {
		return strings.ToLower(a), a != ""
	}
	i := strings.IndexAny(a, ".:")
	if i < 0 {
		return "", false
	}
	if a[i] == '.' {
		ip, ok := parseIPv4Sloppy(a)
		if !ok {
			return "", false
		}
		return ip.String(), true
	}
	if strings.IndexByte(a, '%') >= 0 {
		return "", false // Go's old parser has no zones
	}
	ip, err := netip.ParseAddr(a)
	if err != nil {
		return "", false
	}
	return ip.Unmap().String(), true
}

// parseIPv4Sloppy parses d.d.d.d with decimal octets of any length, as
// Go's parser did before 1.17.
func parseIPv4Sloppy(s string) (netip.Addr, bool) {
	var b [4]byte
	for i := range 4 {
		if i > 0 {
			if s == "" || s[0] != '.' {
				return netip.Addr{}, false
			}
			s = s[1:]
		}
		n, digits := 0, 0
		for digits < len(s) && '0' <= s[digits] && s[digits] <= '9' {
			n = n*10 + int(s[digits]-'0')
			digits++
			if n > 0xFF {
				return netip.Addr{}, false
			}
		}
		if digits == 0 {
			return netip.Addr{}, false
		}
		s = s[digits:]
		b[i] = byte(n)
	}
	if s != "" {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(b), true
}
