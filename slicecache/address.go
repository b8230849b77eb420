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
	ip, ok := parseIPv6Sloppy(a)
	return addrKey{ip: ip.Unmap()}, ok
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

// parseIPv6Sloppy parses an IPv6 address as Go's parser did before 1.17:
// groups of any number of hex digits with a value up to ffff, one "::"
// standing for at least one zero group, and an optional trailing IPv4
// part read by parseIPv4Sloppy. No zones.
func parseIPv6Sloppy(s string) (netip.Addr, bool) {
	var ip [16]byte
	gap := -1 // where "::" stands, in bytes
	if strings.HasPrefix(s, "::") {
		gap, s = 0, s[2:]
	}
	i := 0
	for i < 16 && s != "" {
		n, digits := 0, 0
		for ; digits < len(s) && hexDigit(s[digits]) >= 0; digits++ {
			n = n<<4 | hexDigit(s[digits])
			if n > 0xFFFF {
				return netip.Addr{}, false
			}
		}
		if digits == 0 {
			return netip.Addr{}, false
		}
		if digits < len(s) && s[digits] == '.' { // the trailing IPv4 part
			if (gap < 0 && i != 12) || i > 12 {
				return netip.Addr{}, false
			}
			v4, ok := parseIPv4Sloppy(s)
			if !ok {
				return netip.Addr{}, false
			}
			b := v4.As4()
			copy(ip[i:], b[:])
			i, s = i+4, ""
			break
		}
		ip[i], ip[i+1] = byte(n>>8), byte(n)
		i, s = i+2, s[digits:]
		if s == "" {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return netip.Addr{}, false
		}
		s = s[1:]
		if s[0] == ':' {
			if gap >= 0 {
				return netip.Addr{}, false
			}
			gap, s = i, s[1:]
		}
	}
	if s != "" {
		return netip.Addr{}, false
	}
	switch {
	case i < 16 && gap < 0, i == 16 && gap >= 0:
		return netip.Addr{}, false
	case i < 16:
		shift := 16 - i
		copy(ip[gap+shift:], ip[gap:i])
		clear(ip[gap : gap+shift])
	}
	return netip.AddrFrom16(ip), true
}

// hexDigit returns the value of a hex digit, or -1.
func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
