package slicer

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// written is what a test of the group order looks at in a slice to write:
// its name (empty for a create), its target port and how many endpoints
// it holds.
type written struct {
	Name      string
	Port      int32 // 0: no ports
	Endpoints int
}

func writtenOf(list []Slice) []written {
	out := []written{}
	for _, s := range list {
		w := written{Name: s.Name, Endpoints: len(s.Endpoints)}
		if len(s.Ports) > 0 {
			w.Port = s.Ports[0].Port
		}
		out = append(out, w)
	}
	return out
}

// TestGroupsInOrderOfFirstAppearance: the port sets of an address type are
// reconciled in the order they first appear in desired, so the creates
// come in that order and recycling (from the last create) picks the last
// port sets to appear. Upstream reconciles its port sets in the order of a
// Go map keyed by port set, filled in pod order; with up to 8 port sets
// that order is a rotation of the insertion order (a small map keeps its
// entries in insertion order and a range starts at a random one). For a
// Service being deleted the creates left after recycling are dropped, so
// the slices it keeps must be ones upstream can keep. Before, port sets
// went in sorted order: here that recycled the port sets 9002 and 9001,
// which are never the last two of a rotation of 9002, none, 9001, 9000
// (found by kube/verify/compare/slicer's TestDifferential, seed
// 1796196019237314793, scenario 602).
func TestGroupsInOrderOfFirstAppearance(t *testing.T) {
	port := func(n int32) []Port { return []Port{{Name: "p0", Port: n, Protocol: "TCP"}} }
	eps := func(from, n int) []Endpoint {
		out := make([]Endpoint, n)
		for i := range out {
			out[i] = podEndpoint(from+i, true)
		}
		return out
	}
	// Four port sets in pod order: 9002 (5 endpoints), none (3), 9001 (1)
	// and 9000 (2). Sorted, none comes first and 9002 last.
	fourSets := []Group{
		{AddressType: IPv4, Ports: port(9002), Endpoints: eps(0, 5)},
		{AddressType: IPv4, Ports: []Port{}, Endpoints: eps(5, 3)},
		{AddressType: IPv4, Ports: port(9001), Endpoints: eps(8, 1)},
		{AddressType: IPv4, Ports: port(9000), Endpoints: eps(9, 2)},
	}
	// Two owned slices of a port set no longer desired, and one slice of
	// another owner: all three are deleted, the owned two take creates.
	obsolete := []Slice{
		ownedSlice("foo-old1", port(8081), eps(20, 1)),
		ownedSlice("foo-old2", port(8081), eps(21, 1)),
		{Name: "foo-other", Namespace: "test", AddressType: IPv4, Ports: port(8081), Endpoints: eps(22, 1),
			Owners: []OwnerRef{{APIVersion: "v1", Kind: "Service", Name: "foo", UID: "someone-else", Controller: true}}},
	}
	deleting := testService()
	deleting.Deleting = true

	type want struct {
		Creates, Updates, Deletes []written
	}
	for _, tc := range []struct {
		name     string
		svc      Service
		desired  []Group
		existing []Slice
		want     want
	}{{
		name: "being deleted: the recycled creates are the last port sets to appear",
		svc:  deleting, desired: fourSets, existing: obsolete,
		want: want{
			Creates: []written{},
			Updates: []written{{"foo-old1", 9000, 2}, {"foo-old2", 9001, 1}},
			Deletes: []written{{"foo-other", 8081, 1}},
		},
	}, {
		name: "creates in the order the port sets first appear",
		svc:  testService(), desired: fourSets, existing: obsolete,
		want: want{
			Creates: []written{{"", 9002, 5}, {"", 0, 3}},
			Updates: []written{{"foo-old1", 9000, 2}, {"foo-old2", 9001, 1}},
			Deletes: []written{{"foo-other", 8081, 1}},
		},
	}, {
		// A port set given in two groups is placed where it first
		// appears (pods of one port set need not be next to each other).
		name: "being deleted: a port set seen again keeps its first place",
		svc:  deleting,
		desired: []Group{
			{AddressType: IPv4, Ports: port(9002), Endpoints: eps(0, 2)},
			{AddressType: IPv4, Ports: port(9001), Endpoints: eps(2, 1)},
			{AddressType: IPv4, Ports: port(9002), Endpoints: eps(3, 3)},
		},
		existing: obsolete[:1],
		want: want{
			Creates: []written{},
			Updates: []written{{"foo-old1", 9001, 1}},
			Deletes: []written{},
		},
	}, {
		// An IPv6 group between the IPv4 ones does not move them; each
		// address type is recycled on its own.
		name: "being deleted: order of first appearance within each address type",
		svc: Service{Namespace: "test", Name: "foo", UID: "test-foo", AddressTypes: []AddressType{IPv4, IPv6},
			Headless: true, Deleting: true},
		desired: []Group{
			{AddressType: IPv4, Ports: port(9001), Endpoints: eps(0, 4)},
			{AddressType: IPv6, Ports: port(9001), Endpoints: []Endpoint{v6Endpoint(0)}},
			{AddressType: IPv4, Ports: port(9000), Endpoints: eps(4, 1)},
			{AddressType: IPv6, Ports: port(9000), Endpoints: []Endpoint{v6Endpoint(1), v6Endpoint(2)}},
		},
		existing: obsolete[:1],
		want: want{
			Creates: []written{},
			Updates: []written{{"foo-old1", 9000, 1}},
			Deletes: []written{},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustReconcile(t, tc.svc, tc.desired, tc.existing, Options{})
			got := want{Creates: writtenOf(p.Creates), Updates: writtenOf(p.Updates), Deletes: writtenOf(p.Deletes)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func v6Endpoint(i int) Endpoint {
	return Endpoint{
		Addresses:  []string{fmt.Sprintf("fd00::%x", 1+i)},
		NodeName:   "node-1",
		Conditions: PodConditions(true, false, false),
		TargetRef:  ObjectRef{Kind: "Pod", Namespace: "test", Name: fmt.Sprintf("pod6-%d", i)},
	}
}
