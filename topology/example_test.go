package topology_test

import (
	"fmt"
	"slices"

	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
)

// endpoints returns ready endpoints, n[i] of them in zones[i].
func endpoints(zones []string, n []int) *topology.Slice {
	s := &topology.Slice{Name: "web-abc12", AddressType: slicer.IPv4}
	k := 0
	for i, z := range zones {
		for range n[i] {
			k++
			s.Endpoints = append(s.Endpoints, topology.Endpoint{
				Addresses:  []string{fmt.Sprintf("10.0.0.%d", k)},
				Zone:       z,
				Conditions: slicer.Conditions{Ready: topology.True},
			})
		}
	}
	return s
}

func printByZone(m map[string]int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf(" %s:%d", k, m[k])
	}
	fmt.Println()
}

// Auto hints for 12 endpoints spread evenly over three zones whose CPU is
// 4:4:8: zone-c originates half the traffic, so two endpoints of zone-a and
// two of zone-b are hinted for zone-c.
func ExampleAddHints() {
	c, _ := topology.CapacityFromZones(map[string]int64{"zone-a": 4000, "zone-b": 4000, "zone-c": 8000})
	zones := []string{"zone-a", "zone-b", "zone-c"}
	si := &topology.SliceInfo{AddressType: "IPv4", ToCreate: []*topology.Slice{endpoints(zones, []int{4, 4, 4})}}
	r := topology.AddHints(c, si, topology.Options{})
	fmt.Print("enabled ", r.Enabled(), ":")
	printByZone(r.HintsByZone)
	fmt.Println(r.Events[0].Message)
	// Output:
	// enabled true: zone-a:3 zone-b:3 zone-c:6
	// Topology Aware Hints has been enabled, addressType: IPv4
}

// Eleven endpoints over three equal zones (kubernetes#122437): each zone
// needs ceil(11/3/1.2) = 4 endpoints to stay within 20% overload, 12 in
// all, so upstream turns hints off. The min-cross-zone allocator hints
// zone-a and zone-c for each other's 7 endpoints instead, and keeps two
// thirds of the traffic local (no hints: one third).
func ExampleAddHints_minCrossZone() {
	c, _ := topology.CapacityFromZones(map[string]int64{"zone-a": 4000, "zone-b": 4000, "zone-c": 4000})
	zones := []string{"zone-a", "zone-b", "zone-c"}
	for _, alloc := range []topology.Allocator{topology.AllocatorUpstream, topology.AllocatorMinCrossZone} {
		s := endpoints(zones, []int{4, 4, 3})
		si := &topology.SliceInfo{AddressType: "IPv4", ToCreate: []*topology.Slice{s}}
		r := topology.AddHints(c, si, topology.Options{Allocator: alloc})
		q := topology.Evaluate(c, []*topology.Slice{s})
		fmt.Printf("enabled %v, cross-zone %.0f%%, max overload %.0f%%: %s\n", r.Enabled(), 100*q.CrossZone, 100*q.MaxOverload, r.Fallback.Message())
	}
	// Output:
	// enabled false, cross-zone 67%, max overload 0%: Unable to allocate minimum required endpoints to each zone without exceeding overload threshold (11 endpoints, 3 zones)
	// enabled true, cross-zone 33%, max overload 5%:
}

// After a node change the EndpointSlice controller resyncs the Services
// whose hints would now overload a zone: zone-a doubling its CPU needs at
// least ceil(12 × 0.5 / 1.2) = 5 of the 12 endpoints, and has 4.
func ExampleCapacity_Overloaded() {
	hints := map[string]int{"zone-a": 4, "zone-b": 4, "zone-c": 4}
	before, _ := topology.CapacityFromZones(map[string]int64{"zone-a": 4000, "zone-b": 4000, "zone-c": 4000})
	after, _ := topology.CapacityFromZones(map[string]int64{"zone-a": 8000, "zone-b": 4000, "zone-c": 4000})
	fmt.Println(before.Overloaded(hints), after.Overloaded(hints))
	// Output:
	// false true
}

// The annotation wins over spec.trafficDistribution.
func ExamplePolicyFor() {
	auto := map[string]string{topology.AnnotationTopologyMode: "Auto"}
	fmt.Println(topology.PolicyFor(auto, topology.PreferClose, true))
	fmt.Println(topology.PolicyFor(nil, topology.PreferSameNode, true))
	fmt.Println(topology.PolicyFor(nil, topology.PreferSameNode, false))
	// Output:
	// Auto
	// PreferSameNode
	// None
}

// kube-proxy on a node in zone-b uses the endpoints hinted for zone-b; on
// a node without a zone label it ignores hints.
func ExampleSelectEndpoints() {
	eps := []topology.Endpoint{
		{Addresses: []string{"10.0.0.1"}, Conditions: slicer.Conditions{Ready: topology.True}, Hints: &topology.Hints{ForZones: []string{"zone-a"}}},
		{Addresses: []string{"10.0.0.2"}, Conditions: slicer.Conditions{Ready: topology.True}, Hints: &topology.Hints{ForZones: []string{"zone-b"}}},
	}
	for _, zone := range []string{"zone-b", ""} {
		sel := topology.SelectEndpoints(eps, topology.TrafficPolicy{}, "node-1", zone)
		fmt.Println(sel.Cluster, sel.Why)
	}
	// Output:
	// [1] every ready endpoint has a zone hint and some are for zone zone-b
	// [0 1] hints ignored: the node has no topology.kubernetes.io/zone label
}

// Removing hints copies an unchanged slice once and moves it to ToUpdate.
func ExampleRemoveHints() {
	s := endpoints([]string{"zone-a"}, []int{3})
	for i := range s.Endpoints {
		s.Endpoints[i].Hints = &topology.Hints{ForZones: []string{"zone-a"}}
	}
	si := &topology.SliceInfo{Unchanged: []*topology.Slice{s}}
	topology.RemoveHints(si)
	fmt.Println(len(si.Unchanged), len(si.ToUpdate), si.ToUpdate[0].Endpoints[0].Hints == nil, s.Endpoints[0].Hints != nil)
	// Output:
	// 0 1 true true
}

// Envoy's zone-aware routing: zone-a has half the clients but a quarter of
// the endpoints, so its proxies keep half their traffic local and send the
// rest to zone-b, which has spare endpoints.
func ExampleZoneRouting() {
	p, _ := topology.ZoneRouting(0, []float64{50, 50}, []float64{25, 75})
	fmt.Println(p)
	// Output:
	// [0.5 0.5]
}
