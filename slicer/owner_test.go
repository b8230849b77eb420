package slicer_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/slicer"
)

// TestServiceOwner checks Service.Owner: created slices carry it, a slice
// owned by it is kept, and a slice owned by the Service itself (not the
// configured owner) is deleted, as any slice not owned is.
func TestServiceOwner(t *testing.T) {
	owner := slicer.OwnerRef{APIVersion: "example.io/v1", Kind: "Import", Name: "web", UID: "import-uid"}
	svc := slicer.Service{Namespace: "demo", Name: "web", UID: "web-uid", AddressTypes: []slicer.AddressType{slicer.IPv4}, Owner: owner}
	ports := []slicer.Port{{Name: "http", Port: 8080, Protocol: "TCP"}}
	groups := []slicer.Group{{AddressType: slicer.IPv4, Ports: ports, Endpoints: []slicer.Endpoint{pod(1, true)}}}

	plan, err := slicer.Reconcile(svc, groups, nil, slicer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Creates) != 1 {
		t.Fatalf("Reconcile(no slices) creates %d slices, want 1", len(plan.Creates))
	}
	if diff := cmp.Diff([]slicer.OwnerRef{owner}, plan.Creates[0].Owners); diff != "" {
		t.Errorf("created slice's owners (-want +got):\n%s", diff)
	}

	kept := plan.Creates[0]
	kept.Name = "web-a"
	byService := kept.Clone()
	byService.Name = "web-b"
	byService.Owners = []slicer.OwnerRef{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "web-uid"}}
	plan, err = slicer.Reconcile(svc, groups, []slicer.Slice{kept, byService}, slicer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := func(list []slicer.Slice) []string {
		var out []string
		for _, s := range list {
			out = append(out, s.Name)
		}
		return out
	}
	if got, want := names(plan.Unchanged), []string{"web-a"}; !cmp.Equal(got, want) {
		t.Errorf("unchanged = %v, want %v", got, want)
	}
	if got, want := names(plan.Deletes), []string{"web-b"}; !cmp.Equal(got, want) {
		t.Errorf("deletes = %v, want %v", got, want)
	}
}

func TestServiceOwnerIncomplete(t *testing.T) {
	svc := slicer.Service{Namespace: "demo", Name: "web", UID: "web-uid", AddressTypes: []slicer.AddressType{slicer.IPv4},
		Owner: slicer.OwnerRef{Kind: "Import", Name: "web"}}
	_, err := slicer.Reconcile(svc, nil, nil, slicer.Options{})
	if err == nil || !strings.Contains(err.Error(), "Service.Owner") {
		t.Errorf("Reconcile(Owner without APIVersion and UID) = %v, want an error naming Service.Owner", err)
	}
}
