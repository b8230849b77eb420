package slicer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlanTypesAndDropped checks a plan's per-address-type churn (in the
// order reconciled, whatever the Service's order) and the creates a
// Service being deleted leaves out.
func TestPlanTypesAndDropped(t *testing.T) {
	svc := testService()
	svc.AddressTypes = []AddressType{IPv6, IPv4}
	svc.Deleting = true
	eps := func(from, n int) []Endpoint {
		out := make([]Endpoint, n)
		for i := range out {
			out[i] = podEndpoint(from+i, true)
		}
		return out
	}
	desired := []Group{
		{AddressType: IPv6, Ports: port80, Endpoints: eps(10, 3)},
		{AddressType: IPv4, Ports: port80, Endpoints: eps(0, 2)},
	}
	// The IPv4 slice keeps endpoint 0, loses 5 and takes 1 (an update);
	// the FQDN slice is of a type the Service no longer has (a delete
	// outside the churn); IPv6 has no slice (a create, dropped).
	fqdn := ownedSlice("foo-fqdn", port80, eps(7, 1))
	fqdn.AddressType = FQDN
	existing := []Slice{ownedSlice("foo-v4", port80, []Endpoint{podEndpoint(0, true), podEndpoint(5, true)}), fqdn}
	plan, err := Reconcile(svc, desired, existing, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []TypeChurn{{AddressType: IPv4, Added: 1, Removed: 1}, {AddressType: IPv6, Added: 3}}
	if diff := cmp.Diff(want, plan.Types); diff != "" {
		t.Errorf("Types (-want +got):\n%s", diff)
	}
	if plan.Added != 4 || plan.Removed != 1 {
		t.Errorf("Added, Removed = %d, %d; want 4, 1", plan.Added, plan.Removed)
	}
	type brief struct {
		AddressType AddressType
		Endpoints   int
	}
	var dropped []brief
	for _, s := range plan.Dropped {
		dropped = append(dropped, brief{s.AddressType, len(s.Endpoints)})
	}
	if diff := cmp.Diff([]brief{{IPv6, 3}}, dropped); diff != "" {
		t.Errorf("Dropped (-want +got):\n%s", diff)
	}
	if len(plan.Creates) != 0 || len(plan.Updates) != 1 || len(plan.Deletes) != 1 {
		t.Errorf("%d creates, %d updates, %d deletes; want 0, 1, 1", len(plan.Creates), len(plan.Updates), len(plan.Deletes))
	}
}
