package topologycompare

import (
	"fmt"
	"testing"

	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/endpointslice/topologycache"
)

// benchZones are three zones with allocatable CPU 4:4:8.
var benchZones = []struct {
	name string
	cpu  string
}{{"zone-a", "4"}, {"zone-b", "4"}, {"zone-c", "8"}}

func benchNodes() []*corev1.Node {
	var nodes []*corev1.Node
	for _, z := range benchZones {
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: z.name + "-node", Labels: map[string]string{corev1.LabelTopologyZone: z.name}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(z.cpu)},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		})
	}
	return nodes
}

// benchSlices returns n ready endpoints in slices of 100, placed in the
// zones round robin (so zone-c, with half the CPU, gets too few and hints
// must be moved to it), as upstream objects and as fairslice slices.
func benchSlices(n int) ([]*discovery.EndpointSlice, []*topology.Slice) {
	var api []*discovery.EndpointSlice
	var ours []*topology.Slice
	for i := 0; i < n; i += 100 {
		s := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}, AddressType: discovery.AddressTypeIPv4}
		o := &topology.Slice{Name: s.Name, AddressType: slicer.IPv4}
		for j := i; j < min(n, i+100); j++ {
			zone := benchZones[j%3].name
			addr := fmt.Sprintf("10.%d.%d.%d", j>>16, (j>>8)&255, j&255)
			s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{addr}, Zone: &zone, Conditions: discovery.EndpointConditions{Ready: ptr(true)}})
			o.Endpoints = append(o.Endpoints, topology.Endpoint{Addresses: []string{addr}, Zone: zone, Conditions: slicer.Conditions{Ready: topology.True}})
		}
		api = append(api, s)
		ours = append(ours, o)
	}
	return api, ours
}

// BenchmarkAddHints adds Auto hints to a plan of N endpoints to create
// (slices of 100, 3 zones): upstream's TopologyCache.AddHints against
// fairslice's topology.AddHints.
func BenchmarkAddHints(b *testing.B) {
	nodes := benchNodes()
	for _, n := range []int{100, 1000, 10000} {
		api, ours := benchSlices(n)
		b.Run(fmt.Sprintf("impl=upstream/endpoints=%d", n), func(b *testing.B) {
			tc := topologycache.NewTopologyCache()
			tc.SetNodes(logr.Discard(), nodes)
			b.ReportAllocs()
			for b.Loop() {
				si := &topologycache.SliceInfo{ServiceKey: "ns/svc", AddressType: discovery.AddressTypeIPv4, ToCreate: api}
				tc.AddHints(logr.Discard(), si)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/endpoint")
		})
		b.Run(fmt.Sprintf("impl=fairslice/endpoints=%d", n), func(b *testing.B) {
			mine, err := benchCapacity()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				si := &topology.SliceInfo{AddressType: "IPv4", ToCreate: ours}
				topology.AddHints(mine, si, topology.Options{HadHints: true})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/endpoint")
		})
		b.Run(fmt.Sprintf("impl=fairslice-mincross/endpoints=%d", n), func(b *testing.B) {
			mine, err := benchCapacity()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				si := &topology.SliceInfo{AddressType: "IPv4", ToCreate: ours}
				topology.AddHints(mine, si, topology.Options{HadHints: true, Allocator: topology.AllocatorMinCrossZone})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/endpoint")
		})
	}
}

func benchCapacity() (topology.Capacity, error) {
	m := map[string]int64{}
	for _, z := range benchZones {
		q := resource.MustParse(z.cpu)
		m[z.name] = q.MilliValue()
	}
	return topology.CapacityFromZones(m)
}

// BenchmarkRemoveHints removes the hints of one unchanged slice of N hinted
// endpoints: upstream's RemoveHintsFromSlices (one deep copy per hinted
// endpoint) against fairslice's RemoveHints (one copy of the slice).
func BenchmarkRemoveHints(b *testing.B) {
	for _, n := range []int{100, 1000} {
		api, ours := benchSlices(n)
		apiSlice := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, AddressType: discovery.AddressTypeIPv4}
		oursSlice := &topology.Slice{Name: "s", AddressType: slicer.IPv4}
		for _, s := range api {
			apiSlice.Endpoints = append(apiSlice.Endpoints, s.Endpoints...)
		}
		for _, s := range ours {
			oursSlice.Endpoints = append(oursSlice.Endpoints, s.Endpoints...)
		}
		for i := range apiSlice.Endpoints {
			apiSlice.Endpoints[i].Hints = &discovery.EndpointHints{ForZones: []discovery.ForZone{{Name: *apiSlice.Endpoints[i].Zone}}}
			oursSlice.Endpoints[i].Hints = &topology.Hints{ForZones: []string{oursSlice.Endpoints[i].Zone}}
		}
		b.Run(fmt.Sprintf("impl=upstream/endpoints=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				si := &topologycache.SliceInfo{ServiceKey: "ns/svc", AddressType: discovery.AddressTypeIPv4, Unchanged: []*discovery.EndpointSlice{apiSlice}}
				_, updates := topologycache.RemoveHintsFromSlices(si)
				if len(updates) != 1 || updates[0].Endpoints[n-1].Hints != nil {
					b.Fatal("upstream did not remove the hints")
				}
			}
		})
		b.Run(fmt.Sprintf("impl=fairslice/endpoints=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				si := &topology.SliceInfo{AddressType: "IPv4", Unchanged: []*topology.Slice{oursSlice}}
				topology.RemoveHints(si)
				if len(si.ToUpdate) != 1 || si.ToUpdate[0].Endpoints[n-1].Hints != nil {
					b.Fatal("fairslice did not remove the hints")
				}
			}
		})
	}
}
