package slicer

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// MirroringControllerName is the managed-by label value of mirrored slices.
const MirroringControllerName = "endpointslicemirroring-controller.k8s.io"

// Annotation the mirroring controller does not copy to slices.
const annotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Endpoints is a custom core/v1 Endpoints object (one whose Service has no
// selector) to mirror into EndpointSlices.
type Endpoints struct {
	Namespace, Name, UID string
	Labels, Annotations  map[string]string
	Subsets              []EndpointsSubset
	// Deleting is true when the object has a deletion timestamp: nothing
	// is created then.
	Deleting bool
}

// EndpointsSubset is a group of addresses sharing ports.
type EndpointsSubset struct {
	Addresses, NotReadyAddresses []EndpointsAddress
	Ports                        []Port
}

// EndpointsAddress is one address of an Endpoints subset.
type EndpointsAddress struct {
	IP, Hostname, NodeName string
	TargetRef              ObjectRef
}

// MirrorOptions configure Mirror.
type MirrorOptions struct {
	// MaxEndpointsPerSubset caps the addresses mirrored per subset,
	// 1..1000; 0 means 1000 (kube-controller-manager's default).
	MaxEndpointsPerSubset int
}

// MirrorPlan is the outcome of Mirror: the plan, and how many addresses
// were left out (Skipped, which includes the Invalid ones).
//
// Plan.Added, Updated and Plan.Removed are upstream's
// endpoint_slice_mirroring_controller_endpoints_{added,updated,removed}_per_sync
// for this sync: per address type and port set with endpoints, the
// desired endpoints not in the slice kept for it (all of them when there
// is none), the ones in it whose conditions, node, zone or target
// reference differ, and the ones in it no longer desired; for an address
// type and port set of the Endpoints without endpoints, the endpoints of
// all its slices count as removed. Slices of port sets the Endpoints no
// longer has are deleted without being counted, as upstream.
// DesiredEndpoints holds the number of desired endpoints of each address
// type and port set with any, in the order of the plan's keys: upstream's
// inputs to the endpoints_desired, num_endpoint_slices and
// desired_endpoint_slices gauges (one slice each).
type MirrorPlan struct {
	Plan
	Skipped, Invalid int
	Updated          int
	DesiredEndpoints []int
}

// Mirror plans the EndpointSlices mirroring a custom Endpoints object, as
// upstream's EndpointSliceMirroring controller does: subsets are repacked
// (addresses deduplicated by IP and target UID, a ready occurrence winning,
// and subsets regrouped by identical address sets); each subset
// contributes, ready addresses first, at most MaxEndpointsPerSubset valid
// addresses across both IP families (invalid IPs are skipped and counted);
// there is one slice per (address type, port set), rebuilt whole when
// anything about it changes (endpoints, labels other than managed-by and
// service-name, annotations other than the trigger time and
// last-applied-configuration, or an owner reference to an Endpoints object
// of the same name with another UID) and kept otherwise; extra slices of a
// key and slices of keys no longer desired are deleted; creates are
// recycled into deletes of the same address type. existing are the slices
// labelled with the Endpoints' name and the mirroring controller's name.
//
// Where it differs: repacking compares ports by value, app protocol
// included. Upstream compares an app protocol by its pointer, so for an
// object read from the API it never merges a port that carries one across
// subsets, and applies MaxEndpointsPerSubset to each such subset on its
// own. The plans differ only when such a subset holds more addresses than
// the maximum; which addresses upstream keeps then follows Go's map
// order, so no plan can match it run for run.
func Mirror(ep Endpoints, existing []Slice, opts MirrorOptions) (MirrorPlan, error) {
	limit, err := checkMirror(ep, existing, opts)
	if err != nil {
		return MirrorPlan{}, err
	}
	var out MirrorPlan
	want, keys := desiredMirror(ep.Subsets, limit, &out)
	sorted := slices.Clone(existing)
	slices.SortFunc(sorted, byName)
	creates, updates, deletes := planMirror(ep, sorted, want, keys, limit, &out)
	creates, updates, deletes = recycleMirror(creates, updates, deletes)
	if ep.Deleting {
		creates = nil
	}
	out.Creates, out.Updates, out.Deletes = creates, updates, deletes
	return out, nil
}

// checkMirror returns the MaxEndpointsPerSubset in effect, or every
// problem of Mirror's arguments.
func checkMirror(ep Endpoints, existing []Slice, opts MirrorOptions) (int, error) {
	limit := opts.MaxEndpointsPerSubset
	if limit == 0 {
		limit = MaxMaxEndpointsPerSlice
	}
	var errs []error
	if limit < 1 || limit > MaxMaxEndpointsPerSlice {
		errs = append(errs, fmt.Errorf("slicer: MirrorOptions.MaxEndpointsPerSubset: %d is out of range 1..%d", limit, MaxMaxEndpointsPerSlice))
	}
	if ep.Name == "" {
		errs = append(errs, errors.New("slicer: Endpoints.Name: must not be empty"))
	}
	for i, s := range existing {
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("slicer: existing[%d].Name: must not be empty", i))
		}
	}
	return limit, errors.Join(errs...)
}

// mirrorKey identifies a mirrored slice: address type and sorted port set.
type mirrorKey struct {
	at    AddressType
	ports string
}

// mirrorDesired is the desired content of the slice of one mirrorKey.
type mirrorDesired struct {
	ports []Port
	eps   []Endpoint
	seen  map[string]bool // identities in eps
}

// desiredMirror repacks subsets and returns the desired endpoints per key,
// with the keys in order of first appearance: each subset contributes,
// ready addresses first, at most limit valid addresses across both IP
// families. It counts invalid and skipped addresses in out.
func desiredMirror(subsets []EndpointsSubset, limit int, out *MirrorPlan) (map[mirrorKey]*mirrorDesired, []mirrorKey) {
	want := map[mirrorKey]*mirrorDesired{}
	var keys []mirrorKey
	for _, sub := range repack(subsets) {
		pk := portKey(sub.Ports)
		for _, at := range [...]AddressType{IPv4, IPv6} {
			k := mirrorKey{at, pk}
			if want[k] == nil {
				want[k] = &mirrorDesired{ports: sub.Ports, seen: map[string]bool{}}
				keys = append(keys, k)
			}
		}
		added := 0
		total := len(sub.Addresses) + len(sub.NotReadyAddresses)
		for i, a := range slices.Concat(sub.Addresses, sub.NotReadyAddresses) {
			if added >= limit {
				break
			}
			ip, ok := parseMirroredIP(a.IP)
			if !ok {
				out.Invalid++
				continue
			}
			at := IPv4
			if ip.Is6() {
				at = IPv6
			}
			e := Endpoint{Addresses: []string{ip.String()}, Hostname: a.Hostname, NodeName: a.NodeName, TargetRef: a.TargetRef,
				Conditions: Conditions{Ready: TristateOf(i < len(sub.Addresses))}}
			d := want[mirrorKey{at, pk}]
			if id := identityString(&e); !d.seen[id] {
				d.seen[id] = true
				d.eps = append(d.eps, e)
			}
			added++
		}
		out.Skipped += total - added
	}
	return want, keys
}

// planMirror matches the existing slices, sorted by name, to the desired
// keys: the first slice of a key is kept when unchanged and rebuilt
// otherwise, a key without one gets a new slice, and extra slices of a key
// and slices of keys no longer desired are deleted. It counts endpoint
// changes in out.
func planMirror(ep Endpoints, sorted []Slice, want map[mirrorKey]*mirrorDesired, keys []mirrorKey, limit int, out *MirrorPlan) (creates, updates, deletes []Slice) {
	byKey := map[mirrorKey][]Slice{}
	for _, s := range sorted {
		k := mirrorKey{s.AddressType, portKey(s.Ports)}
		byKey[k] = append(byKey[k], s)
	}
	for _, k := range keys {
		d, old := want[k], byKey[k]
		if len(d.eps) == 0 {
			for _, s := range old {
				out.Removed += len(s.Endpoints)
			}
			deletes = append(deletes, old...)
			continue
		}
		out.DesiredEndpoints = append(out.DesiredEndpoints, len(d.eps))
		if len(old) == 0 {
			out.Added += len(d.eps)
		} else {
			added, updated, removed := mirrorTotals(old[0], d.eps)
			out.Added, out.Updated, out.Removed = out.Added+added, out.Updated+updated, out.Removed+removed
		}
		if len(old) > 0 {
			deletes = append(deletes, old[1:]...)
			if mirroredUnchanged(ep, old[0], d.eps) {
				out.Unchanged = append(out.Unchanged, old[0])
				continue
			}
		}
		s := mirroredSlice(ep, k.at, d.ports, d.eps[:min(len(d.eps), limit)])
		if len(old) > 0 {
			s.Name = old[0].Name
			updates = append(updates, s)
		} else {
			creates = append(creates, s)
		}
	}
	for _, s := range sorted {
		if want[mirrorKey{s.AddressType, portKey(s.Ports)}] == nil {
			deletes = append(deletes, s)
		}
	}
	return creates, updates, deletes
}

// recycleMirror turns creates into updates of deletes of the same address
// type, in order.
func recycleMirror(creates, updates, deletes []Slice) ([]Slice, []Slice, []Slice) {
	for _, at := range [...]AddressType{IPv4, IPv6} {
		for i := 0; i < len(creates); {
			j := slices.IndexFunc(deletes, func(s Slice) bool { return s.AddressType == at })
			if creates[i].AddressType != at || j < 0 {
				i++
				continue
			}
			c := creates[i]
			c.Name = deletes[j].Name
			updates = append(updates, c)
			creates = slices.Delete(creates, i, i+1)
			deletes = slices.Delete(deletes, j, j+1)
		}
	}
	return creates, updates, deletes
}

// repack merges and regroups subsets as upstream's RepackSubsets: per
// port, the set of addresses (by IP and target UID, ready if any
// occurrence is); ports with identical address sets form one subset.
// Addresses are ordered by IP then UID, ports by name, port, protocol and
// app protocol, subsets by their first port.
func repack(subsets []EndpointsSubset) []EndpointsSubset {
	perPort, all := addressesPerPort(subsets)
	var out []EndpointsSubset
	index := map[string]int{}
	for _, e := range perPort {
		sk := addressSetKey(e.ready)
		i, ok := index[sk]
		if !ok {
			i = len(out)
			index[sk] = i
			out = append(out, subsetOf(e.ready, all))
		}
		if !e.none {
			out[i].Ports = append(out[i].Ports, e.port)
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Ports, comparePorts)
	}
	slices.SortFunc(out, func(a, b EndpointsSubset) int { return slices.CompareFunc(a.Ports, b.Ports, comparePorts) })
	return out
}

// repackKey identifies an address for repack: IP and target UID.
type repackKey struct{ ip, uid string }

// repackPort is the address set of one port in repack.
type repackPort struct {
	port  Port
	none  bool // the sentinel for a subset without ports
	ready map[repackKey]bool
}

// addressesPerPort returns, per port in order of first appearance, the
// addresses of the subsets that have it, each ready if any occurrence is;
// and the first occurrence of each address.
func addressesPerPort(subsets []EndpointsSubset) ([]*repackPort, map[repackKey]EndpointsAddress) {
	all := map[repackKey]EndpointsAddress{}
	var perPort []*repackPort
	find := func(p Port, none bool) *repackPort {
		for _, e := range perPort {
			if e.port == p && e.none == none {
				return e
			}
		}
		e := &repackPort{port: p, none: none, ready: map[repackKey]bool{}}
		perPort = append(perPort, e)
		return e
	}
	for _, s := range subsets {
		targets := []*repackPort{}
		if len(s.Ports) == 0 {
			targets = append(targets, find(Port{}, true))
		}
		for _, p := range s.Ports {
			targets = append(targets, find(p, false))
		}
		for _, e := range targets {
			for i, a := range slices.Concat(s.Addresses, s.NotReadyAddresses) {
				k := repackKey{a.IP, a.TargetRef.UID}
				if _, ok := all[k]; !ok {
					all[k] = a
				}
				e.ready[k] = e.ready[k] || i < len(s.Addresses)
			}
		}
	}
	return perPort, all
}

// addressSetKey returns a string equal for equal address sets.
func addressSetKey(m map[repackKey]bool) string {
	var parts []string
	for k, r := range m {
		parts = append(parts, fmt.Sprintf("%s\x00%s\x00%v", k.ip, k.uid, r))
	}
	slices.Sort(parts)
	return strings.Join(parts, "\x01")
}

// subsetOf returns the subset, without ports, of the address set ready,
// ordered by IP then UID.
func subsetOf(ready map[repackKey]bool, all map[repackKey]EndpointsAddress) EndpointsSubset {
	var sub EndpointsSubset
	keys := make([]repackKey, 0, len(ready))
	for k := range ready {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b repackKey) int {
		if c := cmp.Compare(a.ip, b.ip); c != 0 {
			return c
		}
		return cmp.Compare(a.uid, b.uid)
	})
	for _, k := range keys {
		if ready[k] {
			sub.Addresses = append(sub.Addresses, all[k])
		} else {
			sub.NotReadyAddresses = append(sub.NotReadyAddresses, all[k])
		}
	}
	return sub
}

// portKey is a canonical string of a port multiset.
func portKey(ports []Port) string {
	p := slices.Clone(ports)
	slices.SortFunc(p, comparePorts)
	return fmt.Sprintf("%q", p)
}

// parseMirroredIP parses an Endpoints IP leniently (IPv4 parts may have
// leading zeros); an IPv4-mapped IPv6 address is IPv4.
func parseMirroredIP(s string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return legacyIPv4(s)
	}
	return ip.Unmap(), true
}

// mirroredSlice builds the slice mirroring eps for ep.
func mirroredSlice(ep Endpoints, at AddressType, ports []Port, eps []Endpoint) Slice {
	s := Slice{
		GenerateName: GenerateName(ep.Name), Namespace: ep.Namespace, AddressType: at, Ports: ports,
		Endpoints:   slices.Clone(eps),
		Labels:      map[string]string{},
		Annotations: map[string]string{},
		Owners:      []OwnerRef{{APIVersion: "v1", Kind: "Endpoints", Name: ep.Name, UID: ep.UID, Controller: true, BlockOwnerDeletion: true}},
	}
	for k, v := range ep.Labels {
		s.Labels[k] = v
	}
	s.Labels[LabelServiceName] = ep.Name
	s.Labels[LabelManagedBy] = MirroringControllerName
	for k, v := range ep.Annotations {
		if k != AnnotationTriggerTime && k != annotationLastApplied {
			s.Annotations[k] = v
		}
	}
	return s
}

// mirrorTotals counts, between an existing slice and the desired
// endpoints, those to add, those to update (same identity, different
// conditions, node, zone or target reference) and those to remove.
func mirrorTotals(s Slice, eps []Endpoint) (added, updated, removed int) {
	want := make(map[string]*Endpoint, len(eps))
	for i := range eps {
		want[identityString(&eps[i])] = &eps[i]
	}
	matches := 0
	for i := range s.Endpoints {
		w, ok := want[identityString(&s.Endpoints[i])]
		switch {
		case !ok:
			removed++
		case !equalBeyondIdentity(w, &s.Endpoints[i]):
			matches++
			updated++
		default:
			matches++
		}
	}
	return len(want) - matches, updated, removed
}

// mirroredUnchanged reports whether an existing mirrored slice needs no
// rewrite.
func mirroredUnchanged(ep Endpoints, s Slice, eps []Endpoint) bool {
	want := map[string]*Endpoint{}
	for i := range eps {
		want[identityString(&eps[i])] = &eps[i]
	}
	matches := 0
	for i := range s.Endpoints {
		w, ok := want[identityString(&s.Endpoints[i])]
		if !ok || !equalBeyondIdentity(w, &s.Endpoints[i]) {
			return false
		}
		matches++
	}
	if matches != len(want) {
		return false
	}
	labels := map[string]string{}
	for k, v := range s.Labels {
		if k != LabelManagedBy && k != LabelServiceName {
			labels[k] = v
		}
	}
	annotations := map[string]string{}
	for k, v := range ep.Annotations {
		if k != AnnotationTriggerTime && k != annotationLastApplied {
			annotations[k] = v
		}
	}
	if !mapsEqual(labels, ep.Labels) || !mapsEqual(annotations, s.Annotations) {
		return false
	}
	for _, o := range s.Owners {
		if o.Kind == "Endpoints" && o.Name == ep.Name && o.UID != ep.UID {
			return false
		}
	}
	return true
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// identityString is an endpoint's identity as a string.
func identityString(e *Endpoint) string {
	return fmt.Sprintf("%q|%s|%s|%s", sortedAddresses(e), e.Hostname, e.TargetRef.Namespace, e.TargetRef.Name)
}
