package slicer

import (
	"cmp"
	"hash/maphash"
	"net/netip"
	"slices"
)

// identityHash hashes an endpoint's identity: its addresses as a multiset
// (upstream sorts them) and its target name. Hostname and target
// namespace are left out of the hash (they rarely tell endpoints apart);
// sameIdentity compares them.
func identityHash(seed maphash.Seed, e *Endpoint) uint64 {
	var h uint64
	if len(e.Addresses) == 1 {
		h = maphash.String(seed, e.Addresses[0])
	} else {
		// A commutative combination keeps the hash independent of order.
		for _, a := range e.Addresses {
			h += mix(maphash.String(seed, a))
		}
		h ^= uint64(len(e.Addresses)) << 56
	}
	return mix(h ^ maphash.String(seed, e.TargetRef.Name))
}

// mix is a 64-bit finalizer (splitmix64's).
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// sameIdentity reports whether a and b are the same endpoint.
func sameIdentity(a, b *Endpoint) bool {
	if a.Hostname != b.Hostname || a.TargetRef.Namespace != b.TargetRef.Namespace ||
		a.TargetRef.Name != b.TargetRef.Name || len(a.Addresses) != len(b.Addresses) {
		return false
	}
	if len(a.Addresses) == 1 {
		return a.Addresses[0] == b.Addresses[0]
	}
	return slices.Equal(sortedAddresses(a), sortedAddresses(b))
}

// sortedAddresses returns e's addresses sorted, without modifying e.
func sortedAddresses(e *Endpoint) []string {
	if slices.IsSorted(e.Addresses) {
		return e.Addresses
	}
	s := slices.Clone(e.Addresses)
	slices.Sort(s)
	return s
}

// compareIdentity orders endpoints by identity: sorted addresses, then
// hostname, target namespace and target name. It is the order in which
// Reconcile places new endpoints.
func compareIdentity(a, b *Endpoint) int {
	if len(a.Addresses) == 1 && len(b.Addresses) == 1 {
		if c := cmp.Compare(a.Addresses[0], b.Addresses[0]); c != 0 {
			return c
		}
	} else if c := slices.Compare(sortedAddresses(a), sortedAddresses(b)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Hostname, b.Hostname); c != 0 {
		return c
	}
	if c := cmp.Compare(a.TargetRef.Namespace, b.TargetRef.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(a.TargetRef.Name, b.TargetRef.Name)
}

// equalBeyondIdentity reports whether two endpoints of the same identity
// need no rewrite: node name, zone, the three conditions and the target
// reference (without ResourceVersion) are equal. Hints are not compared.
func equalBeyondIdentity(a, b *Endpoint) bool {
	if a.Conditions != b.Conditions || a.NodeName != b.NodeName || a.Zone != b.Zone {
		return false
	}
	return a.TargetRef.equalIgnoringVersion(&b.TargetRef)
}

// comparePorts orders ports by name, port, protocol and app protocol.
func comparePorts(a, b Port) int {
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Port, b.Port); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Protocol, b.Protocol); c != 0 {
		return c
	}
	return cmp.Compare(a.AppProtocol, b.AppProtocol)
}

// samePortSet reports whether ports holds the same multiset of ports as
// sorted, which is sorted by comparePorts. scratch is reused for sorting.
func samePortSet(ports, sorted []Port, scratch *[]Port) bool {
	if len(ports) != len(sorted) {
		return false
	}
	if slices.Equal(ports, sorted) {
		return true
	}
	*scratch = append((*scratch)[:0], ports...)
	slices.SortFunc(*scratch, comparePorts)
	return slices.Equal(*scratch, sorted)
}

// isIPv6String reports whether s parses as an IPv6 (not IPv4-mapped)
// address.
func isIPv6String(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && !a.Is4In6() && a.Zone() == ""
}
