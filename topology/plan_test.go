package topology

import (
	"time"

	"fmt"
	"testing"

	"github.com/fairslice/fairslice/slicer"
	"github.com/google/go-cmp/cmp"
)

// TestHintPlanUpstreamTopology reproduces all 5 cases of
// TestReconcileTopology of k8s.io/endpointslice v0.37.2 (U21): three equal
// zones, existing slices unchanged and without hints, hints added through
// the slicer's plan. Upstream's reconciler without a topology cache ignores
// the annotation: here that is PolicyNone.
func TestHintPlanUpstreamTopology(t *testing.T) {
	svc := slicer.Service{Namespace: "test", Name: "foo", UID: "test-foo", AddressTypes: []slicer.AddressType{slicer.IPv4}, TopologyHints: true}
	ports := []slicer.Port{{Name: "foo", Port: 80, Protocol: "TCP"}}
	n := 0
	mk := func(name string, zones ...string) (slicer.Slice, []slicer.Endpoint) {
		s := slicer.Slice{Name: name, Namespace: "test", AddressType: slicer.IPv4, Ports: ports,
			Owners: []slicer.OwnerRef{{APIVersion: "v1", Kind: "Service", Name: "foo", UID: "test-foo", Controller: true}}}
		for _, z := range zones {
			n++
			s.Endpoints = append(s.Endpoints, slicer.Endpoint{
				Addresses: []string{fmt.Sprintf("10.0.0.%d", n)}, Zone: z, NodeName: z + "-node",
				Conditions: slicer.PodConditions(true, false, false),
				TargetRef:  slicer.ObjectRef{Kind: "Pod", Namespace: "test", Name: fmt.Sprintf("pod%d", n)},
			})
		}
		return s, s.Endpoints
	}
	c := capacityOf("zone-a=1000", "zone-b=1000", "zone-c=1000")
	zc, zcEps := mk("zone-c", "zone-c", "zone-c", "zone-c")
	ac, acEps := mk("zone-a-c", "zone-a", "zone-c", "zone-a", "zone-c")
	ab, abEps := mk("zone-a-b", "zone-a", "zone-b", "zone-a", "zone-b", "zone-b")
	tests := []struct {
		name     string
		policy   Policy
		existing []slicer.Slice
		desired  []slicer.Endpoint
		updates  int
		byZone   map[string]int
		cross    int
	}{
		{"no change, topologyCache disabled, annotation == auto", PolicyNone, []slicer.Slice{zc}, zcEps, 0, map[string]int{}, 0},
		{"enabling topologyCache, hintsAnnotation == auto", PolicyAuto, []slicer.Slice{zc}, zcEps, 1, map[string]int{"zone-a": 1, "zone-b": 1, "zone-c": 1}, 2},
		{"topology enabled,  hintsAnnotation==auto, ratio beyond threshold", PolicyAuto, []slicer.Slice{ac}, acEps, 0, map[string]int{}, 0},
		{"topology enabled, hintsAnnotation==Auto, more slices and endpoints", PolicyAuto, []slicer.Slice{ac, ab}, append(append([]slicer.Endpoint(nil), acEps...), abEps...), 2, map[string]int{"zone-a": 3, "zone-b": 3, "zone-c": 3}, 1},
		{"topology enabled, hintsAnnotation==disabled, more slices and endpoints", PolicyNone, []slicer.Slice{ac, ab}, append(append([]slicer.Endpoint(nil), acEps...), abEps...), 0, map[string]int{}, 0},
	}
	for _, tc := range tests {
		plan, err := slicer.Reconcile(svc, []slicer.Group{{AddressType: slicer.IPv4, Ports: ports, Endpoints: tc.desired}}, tc.existing, slicer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		trigger := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
		res, _ := HintPlan(c, &plan, trigger, tc.policy, Options{})
		for _, s := range plan.Updates {
			if s.Annotations[slicer.AnnotationTriggerTime] != "2026-12-01T06:00:00Z" {
				t.Errorf("%s: rewritten slice %s has annotations %v, want the trigger time", tc.name, s.Name, s.Annotations)
			}
		}
		if len(res) != 1 {
			t.Fatalf("%s: %d results", tc.name, len(res))
		}
		cross := 0
		for _, s := range plan.Updates {
			for _, e := range s.Endpoints {
				if e.Hints != nil && e.Hints.ForZones[0] != e.Zone {
					cross++
				}
			}
		}
		got := []any{len(plan.Creates), len(plan.Updates), res[0].HintsByZone, cross}
		want := []any{0, tc.updates, tc.byZone, tc.cross}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: creates, updates, hints by zone, cross (-want +got):\n%s", tc.name, diff)
		}
	}
}
