package topology

import (
	"maps"
	"sync"
	"testing"

	"github.com/fairslice/fairslice/slicer"
	"go.uber.org/goleak"
)

// TestConcurrentUse is the counterpart of upstream's TestTopologyCacheRace
// (k8s.io/endpointslice v0.37.2 topologycache), whose cache takes a lock
// because SetNodes, AddHints and HasPopulatedHints run concurrently. Here
// there is no shared cache: a Capacity is an immutable value, so one
// goroutine may build new capacities (upstream's SetNodes) while others run
// AddHints and Overloaded on a shared one, each on its own SliceInfo. Run
// with -race; every hinting goroutine must also get the same result.
func TestConcurrentUse(t *testing.T) {
	defer goleak.VerifyNone(t)
	nodes := []Node{
		{Name: "a1", Zone: "zone-a", MilliCPU: 1000, Ready: true}, {Name: "a2", Zone: "zone-a", MilliCPU: 1000, Ready: true},
		{Name: "a3", Zone: "zone-a", MilliCPU: 1000, Ready: true}, {Name: "a4", Zone: "zone-a", MilliCPU: 2000, Ready: true},
		{Name: "b1", Zone: "zone-b", MilliCPU: 3000, Ready: true}, {Name: "b2", Zone: "zone-b", MilliCPU: 1500, Ready: true},
		{Name: "c1", Zone: "zone-c", MilliCPU: 500, Ready: true},
	}
	shared := NewCapacity(nodes)
	plan := func() *SliceInfo {
		s := &Slice{Name: "s"}
		for i, z := range []string{"zone-a", "zone-b", "zone-c", "zone-x", "zone-a", "zone-b", "zone-a", "zone-b", "zone-a", "zone-b"} {
			s.Endpoints = append(s.Endpoints, Endpoint{Addresses: []string{string(rune('a' + i))}, Zone: z, Conditions: slicer.Conditions{Ready: True}})
		}
		return &SliceInfo{AddressType: "IPv4", ToCreate: []*Slice{s}}
	}
	want := AddHints(shared, plan(), Options{})
	if !want.Enabled() {
		t.Fatalf("hints off: %v", want.Fallback.Message())
	}
	var wg sync.WaitGroup
	results := make([]Result, 8)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 50 {
			_ = NewCapacity(nodes)
		}
	}()
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				results[g] = AddHints(shared, plan(), Options{})
				_ = shared.Overloaded(results[g].HintsByZone)
			}
		}()
	}
	wg.Wait()
	for g, r := range results {
		if r.Fallback != want.Fallback || !maps.Equal(r.HintsByZone, want.HintsByZone) {
			t.Errorf("goroutine %d: %+v, want %+v", g, r, want)
		}
	}
}
