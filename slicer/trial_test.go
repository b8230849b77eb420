package slicer

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Regression tests for what a trial by a new user found, and for rules
// that only the kube/ module's differential test caught before.

func TestControllerNameMustBeLabelValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"", true}, // DefaultControllerName
		{"my-controller.example.com", true},
		{"my controller", false},
		{"example.com/controller", false},
		{strings.Repeat("a", 64), false},
	} {
		_, err := NewReconciler(Options{ControllerName: tc.name})
		if (err == nil) != tc.ok {
			t.Errorf("NewReconciler(ControllerName %q) error = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "Options.ControllerName: "+fmt.Sprintf("%q", tc.name)) {
			t.Errorf("NewReconciler(ControllerName %q) error = %v, want the field and value named", tc.name, err)
		}
	}
}

// TestEmptyAddressTypesRefused: a Service without address types would
// have every slice deleted; it is an error instead.
func TestEmptyAddressTypesRefused(t *testing.T) {
	svc := testService()
	svc.AddressTypes = nil
	existing := []Slice{ownedSlice("foo-1", port80, pods(3))}
	p, err := Reconcile(svc, nil, existing, Options{})
	if err == nil || !strings.Contains(err.Error(), "Service.AddressTypes: must not be empty") {
		t.Errorf("Reconcile(no address types) = %d deletes, error %v; want an error naming Service.AddressTypes", len(p.Deletes), err)
	}
}

// TestInvalidWritesReported: slices the API server would refuse are
// reported in Plan.Invalid.
func TestInvalidWritesReported(t *testing.T) {
	svc := testService()
	loop := pods(2)
	loop[1].Addresses = []string{"127.0.0.1"}
	p := mustReconcile(t, svc, v4group(loop, port80), nil, Options{})
	if len(p.Invalid) != 1 || !strings.Contains(p.Invalid[0].Error(), "loopback") {
		t.Errorf("loopback endpoint: Invalid = %v, want one slice with a loopback address", p.Invalid)
	}
	dupPorts := []Port{{Name: "http", Port: 80, Protocol: "TCP"}, {Name: "http", Port: 81, Protocol: "TCP"}}
	p = mustReconcile(t, svc, v4group(pods(1), dupPorts), nil, Options{})
	if len(p.Invalid) != 1 || !strings.Contains(p.Invalid[0].Error(), "http") {
		t.Errorf("duplicate port names: Invalid = %v, want one slice", p.Invalid)
	}
	if p := mustReconcile(t, svc, v4group(pods(3), port80), nil, Options{}); p.Invalid != nil {
		t.Errorf("valid plan: Invalid = %v, want none", p.Invalid)
	}
}

// TestLoweredMaxLeavesFullSlices: a slice holding more endpoints than a
// lowered maximum is left as it is while nothing in it changes, and keeps
// all its endpoints when one of them changes, as upstream.
func TestLoweredMaxLeavesFullSlices(t *testing.T) {
	svc := testService()
	existing := []Slice{ownedSlice("foo-1", port80, pods(150))}
	existing[0].Labels = SliceLabels(&svc, DefaultControllerName)
	p := mustReconcile(t, svc, v4group(pods(150), port80), existing, Options{MaxEndpointsPerSlice: 100})
	if p.Writes() != 0 || len(p.Unchanged) != 1 {
		t.Errorf("Reconcile(150 endpoints in one slice, max 100) = %d writes, want none", p.Writes())
	}
	// One endpoint changes: the slice is rewritten with all 150, not
	// split (upstream keeps every endpoint still desired in its slice).
	changed := pods(150)
	changed[7].Conditions = PodConditions(false, false, false)
	p = mustReconcile(t, svc, v4group(changed, port80), existing, Options{MaxEndpointsPerSlice: 100})
	if len(p.Creates) != 0 || len(p.Deletes) != 0 || len(p.Updates) != 1 || len(p.Updates[0].Endpoints) != 150 {
		t.Errorf("Reconcile(one of 150 changed, max 100) = %d creates, %d deletes, updates %v; want one update of 150",
			len(p.Creates), len(p.Deletes), lengths(p.Updates))
	}
}

// lengths returns the number of endpoints of each slice.
func lengths(ss []Slice) []int {
	out := make([]int, len(ss))
	for i := range ss {
		out[i] = len(ss[i].Endpoints)
	}
	return out
}

// labelled returns an owned slice with the Service's labels.
func labelled(svc Service, name string, eps []Endpoint) Slice {
	s := ownedSlice(name, port80, eps)
	s.Labels = SliceLabels(&svc, DefaultControllerName)
	return s
}

// TestRemainderBestFit: endpoints left over after the full new slices go
// whole into the unchanged slice they fill best.
func TestRemainderBestFit(t *testing.T) {
	svc := testService()
	all := pods(60 + 80 + 90 + 15)
	existing := []Slice{
		labelled(svc, "foo-a", all[:60]),
		labelled(svc, "foo-b", all[60:140]),
		labelled(svc, "foo-c", all[140:230]),
	}
	p := mustReconcile(t, svc, v4group(all, port80), existing, Options{})
	if len(p.Creates) != 0 || len(p.Updates) != 1 || p.Updates[0].Name != "foo-b" || len(p.Updates[0].Endpoints) != 95 {
		t.Errorf("Reconcile(15 new, slices of 60, 80, 90) = %d creates, updates %v; want foo-b filled to 95", len(p.Creates), names(p.Updates))
	}
}

// TestRemainderEqualToMax: a remainder of exactly MaxEndpointsPerSlice is
// a full new slice, not merged anywhere.
func TestRemainderEqualToMax(t *testing.T) {
	svc := testService()
	all := pods(110)
	existing := []Slice{labelled(svc, "foo-a", all[:10])}
	p := mustReconcile(t, svc, v4group(all, port80), existing, Options{})
	if len(p.Creates) != 1 || len(p.Creates[0].Endpoints) != 100 || len(p.Updates) != 0 {
		t.Errorf("Reconcile(100 new, max 100) = %d creates, %d updates; want one full create", len(p.Creates), len(p.Updates))
	}
}

// TestPlaceholderLabelExtras: an existing placeholder carrying a label
// the Service does not give is replaced (recycled into an update); one
// with exactly the Service's labels is kept.
func TestPlaceholderLabelExtras(t *testing.T) {
	svc := testService()
	svc.Labels = map[string]string{"app": "web"}
	want := SliceLabels(&svc, DefaultControllerName)
	ph := ownedSlice("foo-ph", []Port{}, nil)
	ph.Labels = maps.Clone(want)
	if p := mustReconcile(t, svc, nil, []Slice{ph}, Options{}); p.Writes() != 0 {
		t.Errorf("placeholder with the Service's labels: %d writes, want none", p.Writes())
	}
	ph.Labels["extra"] = "x"
	p := mustReconcile(t, svc, nil, []Slice{ph}, Options{})
	if len(p.Updates) != 1 || p.Writes() != 1 || p.Updates[0].Name != "foo-ph" {
		t.Fatalf("placeholder with an extra label: updates %v, %d writes; want foo-ph rewritten", names(p.Updates), p.Writes())
	}
	if diff := cmp.Diff(want, p.Updates[0].Labels); diff != "" {
		t.Errorf("rewritten placeholder labels (-want +got):\n%s", diff)
	}
}

// TestHostnameInIdentity: the same address and target with another
// hostname is another endpoint (removed and added), not a changed one.
func TestHostnameInIdentity(t *testing.T) {
	svc := testService()
	old := pods(2)
	old[0].Hostname = "a"
	cur := pods(2)
	cur[0].Hostname = "b"
	p := mustReconcile(t, svc, v4group(cur, port80), []Slice{labelled(svc, "foo-a", old)}, Options{})
	if p.Added != 1 || p.Removed != 1 {
		t.Errorf("Reconcile(hostname a -> b) = added %d, removed %d; want 1, 1", p.Added, p.Removed)
	}
}

func TestPodConditionsTerminating(t *testing.T) {
	for _, tc := range []struct {
		ready, terminating, pnr bool
		want                    Conditions
	}{
		{true, false, false, Conditions{Ready: True, Serving: True, Terminating: False}},
		{true, true, false, Conditions{Ready: False, Serving: True, Terminating: True}},
		{false, true, false, Conditions{Ready: False, Serving: False, Terminating: True}},
		{true, true, true, Conditions{Ready: True, Serving: True, Terminating: True}},
		{false, false, true, Conditions{Ready: True, Serving: False, Terminating: False}},
	} {
		if got := PodConditions(tc.ready, tc.terminating, tc.pnr); got != tc.want {
			t.Errorf("PodConditions(%v, %v, %v) = %+v, want %+v", tc.ready, tc.terminating, tc.pnr, got, tc.want)
		}
	}
}

// TestMax1000Accepted: the largest maximum the API allows packs and
// validates.
func TestMax1000Accepted(t *testing.T) {
	eps := make([]Endpoint, 2500)
	for i := range eps {
		eps[i] = podEndpoint(i, true)
		eps[i].Addresses = []string{fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)}
	}
	p := mustReconcile(t, testService(), v4group(eps, port80), nil, Options{MaxEndpointsPerSlice: 1000})
	if got := countsOf(p, nil); !cmp.Equal(got.Lengths, []int{1000, 1000, 500}) {
		t.Errorf("Reconcile(2500 endpoints, max 1000) lengths = %v, want [1000 1000 500]", got.Lengths)
	}
	if p.Invalid != nil {
		t.Errorf("Reconcile(max 1000): Invalid = %v, want none", p.Invalid)
	}
	if _, err := NewReconciler(Options{MaxEndpointsPerSlice: 1001}); err == nil {
		t.Error("NewReconciler(max 1001): no error")
	}
	// 0 is the default, 100, not an error.
	if _, err := NewReconciler(Options{}); err != nil {
		t.Errorf("NewReconciler(max 0) = %v, want the default", err)
	}
	p = mustReconcile(t, testService(), v4group(eps[:150], port80), nil, Options{})
	if got := countsOf(p, nil); !cmp.Equal(got.Lengths, []int{100, 50}) {
		t.Errorf("Reconcile(150 endpoints, max 0) lengths = %v, want [100 50]", got.Lengths)
	}
}

func names(ss []Slice) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}
