package slicecache

import (
	"net/netip"
	"strings"

	"github.com/fairslice/fairslice/slicer"
)

// addrKey is a normalised address: an IP, or for FQDN a lower-cased
// name. Comparing keys needs no string for IPs.
type addrKey struct {
	ip   netip.Addr
	name string
}

func (k addrKey) String() string {
	if k.ip.IsValid() {
		return k.ip.String()
	}
	return k.name
}

// parseAddress returns the key of an address in a cache of type t, or ok
// false for an address that kube-proxy could not parse as an IP.
//
// kube-proxy parses with k8s.io/utils' ParseIPSloppy, Go's pre-1.17
// parser: the first '.' or ':' decides between IPv4 and IPv6, and IPv4
// octets may have leading zeros, read as decimal. It then prints the IP
// with net.IP's String: IPv4-mapped IPv6 addresses print as IPv4.
func parseAddress(t slicer.AddressType, a string) (addrKey, bool) {
	if t == slicer.FQDN {
		return addrKey{name: strings.ToLower(a)}, a != ""
	}
	i := strings.IndexAny(a, ".:")
	if i < 0 {
		return addrKey{}, false
	}
	if a[i] == '.' {
		ip, ok := parseIPv4Sloppy(a)
		return addrKey{ip: ip}, ok
	}
	if strings.IndexByte(a, '%') >= 0 {
		return addrKey{}, false // Go's old parser has no zones
	}
	if j := strings.LastIndexByte(a, ':'); strings.IndexByte(a[j:], '.') >= 0 {
		// A trailing IPv4 part is read sloppily too.
		v4, ok := parseIPv4Sloppy(a[j+1:])
		if !ok {
			return addrKey{}, false
		}
		a = a[:j+1] + v4.String()
	}
	ip, err := netip.ParseAddr(a)
	if err != nil {
		return addrKey{}, false
	}
	return addrKey{ip: ip.Unmap()}, true
}

// normalize is parseAddress as a string.
func normalize(t slicer.AddressType, a string) (string, bool) {
	k, ok := parseAddress(t, a)
	if !ok {
		return "", false
	}
	return k.String(), true
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
