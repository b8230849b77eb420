package slicer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func addrs(prefix string, n int) []EndpointsAddress {
	var out []EndpointsAddress
	for i := range n {
		out = append(out, EndpointsAddress{IP: fmt.Sprintf("%s.%d", prefix, i+1)})
	}
	return out
}

func TestMirrorUpstreamCases(t *testing.T) {
	ep := Endpoints{Namespace: "ns", Name: "svc", UID: "u", Labels: map[string]string{"foo": "bar"}}
	// Upstream "2 subsets, 1 exceeding maxEndpointsPerSubset".
	ep.Subsets = []EndpointsSubset{
		{Ports: []Port{{Name: "http", Port: 80, Protocol: "TCP"}}, Addresses: addrs("10.0.0", 2)},
		{Ports: []Port{{Name: "https", Port: 443, Protocol: "UDP"}}, Addresses: addrs("10.0.1", 3)},
	}
	p, err := Mirror(ep, nil, MirrorOptions{MaxEndpointsPerSubset: 2})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range p.Creates {
		n += len(s.Endpoints)
		if s.Labels[LabelManagedBy] != MirroringControllerName || s.Labels["foo"] != "bar" || s.Owners[0].Kind != "Endpoints" {
			t.Errorf("mirrored slice metadata: labels %v, owners %v", s.Labels, s.Owners)
		}
	}
	if len(p.Creates) != 2 || n != 4 || p.Skipped != 1 || p.Writes() != 2 {
		t.Fatalf("Mirror = %d creates, %d endpoints, %d skipped; want 2, 4, 1", len(p.Creates), n, p.Skipped)
	}

	// Mirroring the result again changes nothing.
	var existing []Slice
	for i, s := range p.Creates {
		s.Name = fmt.Sprintf("svc-%d", i)
		existing = append(existing, s)
	}
	again, _ := Mirror(ep, existing, MirrorOptions{MaxEndpointsPerSubset: 2})
	if again.Writes() != 0 || len(again.Unchanged) != 2 {
		t.Fatalf("second Mirror: %d writes, %d unchanged; want 0, 2", again.Writes(), len(again.Unchanged))
	}

	// A new label rebuilds both slices in place; a changed port recycles.
	ep2 := ep
	ep2.Labels = map[string]string{"foo": "baz"}
	if p, _ := Mirror(ep2, existing, MirrorOptions{MaxEndpointsPerSubset: 2}); len(p.Updates) != 2 || p.Writes() != 2 {
		t.Errorf("relabel: %d updates, %d writes; want 2, 2", len(p.Updates), p.Writes())
	}
	ep3 := ep
	ep3.Subsets = []EndpointsSubset{ep.Subsets[0], {Ports: []Port{{Name: "https", Port: 8443, Protocol: "UDP"}}, Addresses: addrs("10.0.1", 3)}}
	if p, _ := Mirror(ep3, existing, MirrorOptions{MaxEndpointsPerSubset: 2}); len(p.Updates) != 1 || p.Writes() != 1 {
		t.Errorf("port change: %d creates %d updates %d deletes; want one recycled update", len(p.Creates), len(p.Updates), len(p.Deletes))
	}
}

func TestMirrorInvalidAndReadyFirst(t *testing.T) {
	ep := Endpoints{Namespace: "ns", Name: "svc", UID: "u", Subsets: []EndpointsSubset{{
		Ports:             []Port{{Name: "p", Port: 1, Protocol: "TCP"}},
		Addresses:         []EndpointsAddress{{IP: "bogus"}, {IP: "010.0.0.1"}, {IP: "fd00::1"}},
		NotReadyAddresses: []EndpointsAddress{{IP: "10.0.0.2"}, {IP: "10.0.0.3"}},
	}}}
	p, err := Mirror(ep, nil, MirrorOptions{MaxEndpointsPerSubset: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Ready first: 10.0.0.1 and fd00::1, then not-ready 10.0.0.2; 10.0.0.3
	// is over the cap, "bogus" is invalid and does not count.
	if p.Invalid != 1 || p.Skipped != 2 || len(p.Creates) != 2 {
		t.Fatalf("Mirror = %d invalid, %d skipped, %d creates; want 1, 2, 2", p.Invalid, p.Skipped, len(p.Creates))
	}
	v4 := p.Creates[0]
	if v4.AddressType != IPv4 || len(v4.Endpoints) != 2 || v4.Endpoints[0].Addresses[0] != "10.0.0.1" || v4.Endpoints[0].Conditions.Ready != True ||
		v4.Endpoints[1].Conditions.Ready != False || v4.Endpoints[0].Conditions.Serving != Unset {
		t.Errorf("IPv4 slice = %+v", v4)
	}
}

// TestMirrorRefusesBadInput: each problem is reported on its own, and
// all of them at once.
func TestMirrorRefusesBadInput(t *testing.T) {
	named := Endpoints{Namespace: "ns", Name: "svc"}
	for _, tc := range []struct {
		name     string
		ep       Endpoints
		existing []Slice
		opts     MirrorOptions
		want     []string
	}{
		{"bad cap", named, nil, MirrorOptions{MaxEndpointsPerSubset: 1001}, []string{"MaxEndpointsPerSubset: 1001"}},
		{"negative cap", named, nil, MirrorOptions{MaxEndpointsPerSubset: -1}, []string{"MaxEndpointsPerSubset: -1"}},
		{"no name", Endpoints{Namespace: "ns"}, nil, MirrorOptions{MaxEndpointsPerSubset: 3}, []string{"Endpoints.Name"}},
		{"unnamed existing slice", named, []Slice{{Namespace: "ns"}}, MirrorOptions{}, []string{"existing[0].Name"}},
		{"bad cap and no name", Endpoints{}, nil, MirrorOptions{MaxEndpointsPerSubset: 1001},
			[]string{"MaxEndpointsPerSubset: 1001", "Endpoints.Name"}},
	} {
		_, err := Mirror(tc.ep, tc.existing, tc.opts)
		if err == nil {
			t.Errorf("%s: Mirror = nil error, want one naming %q", tc.name, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Mirror error %q does not name %q", tc.name, err, w)
			}
		}
	}
}

// TestMirrorTotals: the added/updated/removed counts and desired
// endpoints per slice key that upstream's mirroring metrics record,
// through a sequence of syncs where each step feeds the slices the
// previous one planned.
func TestMirrorTotals(t *testing.T) {
	http := []Port{{Name: "http", Port: 80, Protocol: "TCP"}}
	dns := []Port{{Name: "dns", Port: 53, Protocol: "UDP"}}
	ep := Endpoints{Namespace: "ns", Name: "svc", UID: "u"}
	type totals struct{ Added, Updated, Removed, Writes int }
	var existing []Slice
	step := func(name string, subsets []EndpointsSubset, want totals, wantDesired []int) {
		t.Helper()
		ep.Subsets = subsets
		p, err := Mirror(ep, existing, MirrorOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := totals{p.Added, p.Updated, p.Removed, p.Writes()}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: totals (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(wantDesired, p.DesiredEndpoints); diff != "" {
			t.Errorf("%s: DesiredEndpoints (-want +got):\n%s", name, diff)
		}
		// The next step starts from what this one leaves.
		next := append([]Slice(nil), p.Unchanged...)
		for i, s := range append(append([]Slice(nil), p.Creates...), p.Updates...) {
			if s.Name == "" {
				s.Name = fmt.Sprintf("%s-%d", name, i)
			}
			next = append(next, s)
		}
		existing = next
	}
	step("create", []EndpointsSubset{{Ports: http, Addresses: addrs("10.0.0", 3)}},
		totals{Added: 3, Writes: 1}, []int{3})
	step("no change", []EndpointsSubset{{Ports: http, Addresses: addrs("10.0.0", 3)}},
		totals{}, []int{3})
	// 10.0.0.3 becomes not ready (updated), 10.0.0.2 goes (removed),
	// 10.0.0.4 comes (added).
	changed := []EndpointsAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.4"}}
	step("change", []EndpointsSubset{{Ports: http, Addresses: changed, NotReadyAddresses: []EndpointsAddress{{IP: "10.0.0.3"}}}},
		totals{Added: 1, Updated: 1, Removed: 1, Writes: 1}, []int{3})
	// A second port set: its endpoints are all added.
	step("second port set", []EndpointsSubset{
		{Ports: http, Addresses: changed, NotReadyAddresses: []EndpointsAddress{{IP: "10.0.0.3"}}},
		{Ports: dns, Addresses: addrs("10.0.1", 2)},
	}, totals{Added: 2, Writes: 1}, []int{2, 3}) // keys in order: dns before http
	// The first port set loses its addresses: its slice's endpoints
	// count as removed; the deletion of a port set that is gone
	// entirely would not be counted.
	step("empty port set", []EndpointsSubset{{Ports: http}, {Ports: dns, Addresses: addrs("10.0.1", 2)}},
		totals{Removed: 3, Writes: 1}, []int{2})
}
