package adapter

// Pod IPs → canonical addresses, parsed as leniently as upstream.

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// canonicalIP parses ip leniently (IPv4 octets may have leading zeros, as
// upstream's ParseIPSloppy allows) and returns its canonical form, reusing
// ip when it is canonical already, and whether it is IPv6 (an IPv4-mapped
// IPv6 address counts as IPv4).
func (c *Converter) canonicalIP(ip string) (string, bool, error) {
	if canonicalIPv4(ip) {
		return ip, false, nil
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Zone() != "" {
		var ok bool
		if a, ok = sloppyIPv4(ip); !ok {
			return "", false, fmt.Errorf("%q is not an IP address", ip)
		}
	}
	if a.Is4() && err == nil {
		return ip, false, nil // netip accepts only the canonical dotted quad
	}
	a = a.Unmap()
	c.buf = a.AppendTo(c.buf[:0])
	if string(c.buf) == ip {
		return ip, a.Is6(), nil
	}
	return string(c.buf), a.Is6(), nil
}

// canonicalIPv4 reports whether s is an IPv4 address in canonical form:
// four decimal parts of at most 255, without leading zeros, separated by
// dots. It is the common case of a pod IP, told without parsing.
func canonicalIPv4(s string) bool {
	if len(s) < len("0.0.0.0") || len(s) > len("255.255.255.255") {
		return false
	}
	dots, digits, part := 0, 0, 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '.' {
			if digits == 0 {
				return false
			}
			dots++
			digits, part = 0, 0
			continue
		}
		if ch < '0' || ch > '9' || digits > 0 && part == 0 {
			return false // not a digit, or after a leading zero
		}
		part = part*10 + int(ch-'0')
		digits++
		if part > 255 {
			return false
		}
	}
	return dots == 3 && digits > 0
}

// sloppyIPv4 parses a dotted quad whose parts may have leading zeros
// (read as decimal).
func sloppyIPv4(s string) (netip.Addr, bool) {
	var b [4]byte
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	for i, p := range parts {
		if p == "" || len(p) > 3 || strings.TrimLeft(p, "0123456789") != "" {
			return netip.Addr{}, false
		}
		n, err := strconv.Atoi(p)
		if err != nil || n > 255 {
			return netip.Addr{}, false
		}
		b[i] = byte(n)
	}
	return netip.AddrFrom4(b), true
}
