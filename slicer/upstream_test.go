package slicer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The scenarios of upstream's reconciler_test.go (k8s.io/endpointslice
// v0.37.2), U1-U19 in the reference notes: one Service test/foo with UID
// test-foo, IPv4, no cluster IP, port foo → 80/TCP, pods pod<i> with IP
// 1.2.3.<4+i> (not a valid IP from i = 252 on; the reconciler does not
// care) on node-1, existing slices built the same way without labels.

func testService() Service {
	return Service{Namespace: "test", Name: "foo", UID: "test-foo", AddressTypes: []AddressType{IPv4}, Headless: true}
}

var port80 = []Port{{Name: "foo", Port: 80, Protocol: "TCP"}}

func podEndpoint(i int, ready bool) Endpoint {
	return Endpoint{
		Addresses:  []string{fmt.Sprintf("1.2.3.%d", 4+i)},
		NodeName:   "node-1",
		Conditions: PodConditions(ready, false, false),
		TargetRef:  ObjectRef{Kind: "Pod", Namespace: "test", Name: fmt.Sprintf("pod%d", i)},
	}
}

func pods(n int) []Endpoint {
	out := make([]Endpoint, n)
	for i := range out {
		out[i] = podEndpoint(i, true)
	}
	return out
}

func ownedSlice(name string, ports []Port, eps []Endpoint) Slice {
	return Slice{
		Name: name, Namespace: "test", AddressType: IPv4, Ports: ports, Endpoints: eps,
		Owners: []OwnerRef{{APIVersion: "v1", Kind: "Service", Name: "foo", UID: "test-foo", Controller: true}},
	}
}

// counts is what the upstream tests check.
type counts struct {
	Creates, Updates, Deletes int
	Lengths                   []int
}

// apply returns the slices after plan, named like the fake API server
// names created slices.
func apply(plan Plan, existing []Slice) []Slice {
	byName := map[string]Slice{}
	for _, s := range existing {
		byName[s.Name] = s
	}
	for _, s := range plan.Deletes {
		delete(byName, s.Name)
	}
	for _, s := range plan.Updates {
		byName[s.Name] = s
	}
	for i, s := range plan.Creates {
		s.Name = fmt.Sprintf("%screated-%05d", s.GenerateName, i)
		byName[s.Name] = s
	}
	var out []Slice
	for _, s := range byName {
		out = append(out, s)
	}
	slices.SortFunc(out, byName2)
	return out
}

func byName2(a, b Slice) int { return byName(a, b) }

func countsOf(plan Plan, existing []Slice) counts {
	c := counts{Creates: len(plan.Creates), Updates: len(plan.Updates), Deletes: len(plan.Deletes)}
	for _, s := range apply(plan, existing) {
		c.Lengths = append(c.Lengths, len(s.Endpoints))
	}
	slices.SortFunc(c.Lengths, func(a, b int) int { return b - a })
	return c
}

func mustReconcile(t *testing.T, svc Service, desired []Group, existing []Slice, opts Options) Plan {
	t.Helper()
	p, err := Reconcile(svc, desired, existing, opts)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return p
}

func v4group(eps []Endpoint, ports []Port) []Group {
	return []Group{{AddressType: IPv4, Ports: ports, Endpoints: eps}}
}

func check(t *testing.T, name string, p Plan, existing []Slice, want counts) {
	t.Helper()
	if diff := cmp.Diff(want, countsOf(p, existing)); diff != "" {
		t.Errorf("%s: counts mismatch (-want +got):\n%s", name, diff)
	}
}

func TestUpstreamEmptyAndPlaceholder(t *testing.T) { // U1, U2
	svc := testService()
	p := mustReconcile(t, svc, v4group(nil, port80), nil, Options{})
	check(t, "U1 empty", p, nil, counts{Creates: 1, Lengths: []int{0}})
	if len(p.Creates) != 1 || p.Creates[0].Ports == nil || len(p.Creates[0].Ports) != 0 {
		t.Errorf("U1 placeholder ports = %#v, want []", p.Creates)
	}

	same := p.Creates[0]
	same.Name = "foo-abcde"
	p2 := mustReconcile(t, svc, nil, []Slice{same}, Options{})
	check(t, "U2b same placeholder", p2, []Slice{same}, counts{Lengths: []int{0}})

	diff := ownedSlice("foo-1", port80, nil)
	diff.Labels = map[string]string{"bar": "baz"}
	p3 := mustReconcile(t, svc, nil, []Slice{diff}, Options{})
	check(t, "U2c different placeholder", p3, []Slice{diff}, counts{Updates: 1, Lengths: []int{0}})
}

func TestUpstreamOnePodDualStack(t *testing.T) { // U3
	ep := Endpoint{
		Addresses: []string{"1.2.3.4"}, NodeName: "node-1", Zone: "us-central1-a",
		Conditions: PodConditions(true, false, false),
		TargetRef:  ObjectRef{Kind: "Pod", Namespace: "test", Name: "pod1"},
	}
	ep6 := ep
	ep6.Addresses = []string{"1234::5678:0:0:9abc:def0"}
	trigger := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, tc := range []struct {
		name  string
		types []AddressType
		want  int
	}{
		{"ipv4", []AddressType{IPv4}, 1},
		{"ipv6", []AddressType{IPv6}, 1},
		{"dual", []AddressType{IPv4, IPv6}, 2},
	} {
		svc := testService()
		svc.AddressTypes = tc.types
		svc.TriggerTime = trigger
		var desired []Group
		for _, at := range tc.types {
			e := ep
			if at == IPv6 {
				e = ep6
			}
			desired = append(desired, Group{AddressType: at, Ports: port80, Endpoints: []Endpoint{e}})
		}
		p := mustReconcile(t, svc, desired, nil, Options{})
		if len(p.Creates) != tc.want {
			t.Fatalf("%s: creates = %d, want %d", tc.name, len(p.Creates), tc.want)
		}
		for _, s := range p.Creates {
			if got := s.Annotations[AnnotationTriggerTime]; got != "2026-01-02T03:04:05.000000006Z" {
				t.Errorf("%s: trigger time = %q", tc.name, got)
			}
			if _, ok := s.Labels[LabelHeadless]; !ok {
				t.Errorf("%s: labels %v lack the headless label", tc.name, s.Labels)
			}
			if len(s.Endpoints) != 1 || s.Endpoints[0].Zone != "us-central1-a" {
				t.Errorf("%s: endpoints = %+v", tc.name, s.Endpoints)
			}
		}
	}
	if got := AddressTypesFor(nil, "10.0.0.10"); !slices.Equal(got, []AddressType{IPv4}) {
		t.Errorf("AddressTypesFor(nil, 10.0.0.10) = %v, want [IPv4]", got)
	}
	if got := AddressTypesFor(nil, "None"); !slices.Equal(got, []AddressType{IPv4, IPv6}) {
		t.Errorf("AddressTypesFor(nil, None) = %v, want [IPv4 IPv6]", got)
	}
	if got := AddressTypesFor([]string{"IPv6"}, ""); !slices.Equal(got, []AddressType{IPv6}) {
		t.Errorf("AddressTypesFor([IPv6], \"\") = %v, want [IPv6]", got)
	}
}

func TestUpstreamPublishNotReady(t *testing.T) { // U4
	eps := make([]Endpoint, 50)
	for i := range eps {
		eps[i] = podEndpoint(i, i%3 != 0)
		eps[i].Conditions = PodConditions(i%3 != 0, false, true)
	}
	p := mustReconcile(t, testService(), v4group(eps, port80), nil, Options{})
	check(t, "U4", p, nil, counts{Creates: 1, Lengths: []int{50}})
	for _, e := range p.Creates[0].Endpoints {
		if e.Conditions.Ready != True {
			t.Fatalf("U4: endpoint %v not ready", e.Addresses)
		}
	}
}

// every returns pods start, start+step, ... below end.
func every(all []Endpoint, start, step, end int) []Endpoint {
	var out []Endpoint
	for i := start; i < end; i += step {
		out = append(out, all[i])
	}
	return out
}

func TestUpstreamManyPods(t *testing.T) { // U5, U6, U7
	p := mustReconcile(t, testService(), v4group(pods(250), port80), nil, Options{})
	check(t, "U5", p, nil, counts{Creates: 3, Lengths: []int{100, 100, 50}})
	if p.Added != 250 {
		t.Errorf("U5 added = %d, want 250", p.Added)
	}

	all := pods(250)
	ex := []Slice{ownedSlice("s1", port80, every(all, 1, 4, 246)), ownedSlice("s2", port80, every(all, 3, 4, 244))}
	p = mustReconcile(t, testService(), v4group(all, port80), ex, Options{})
	check(t, "U6", p, ex, counts{Creates: 1, Updates: 1, Lengths: []int{100, 89, 61}})
	if p.Added != 127 {
		t.Errorf("U6 added = %d, want 127", p.Added)
	}

	all = pods(300)
	ex = []Slice{ownedSlice("s1", port80, every(all, 1, 4, 294)), ownedSlice("s2", port80, every(all, 3, 4, 296))}
	p = mustReconcile(t, testService(), v4group(all, port80), ex, Options{})
	check(t, "U7", p, ex, counts{Creates: 2, Lengths: []int{100, 74, 74, 52}})
}

func TestUpstreamUpdatingPortsAndLabels(t *testing.T) { // U8, U9, U10, U11
	svc := testService()
	all := pods(250)
	first := mustReconcile(t, svc, v4group(all, port80), nil, Options{})
	ex := apply(first, nil)
	port81 := []Port{{Name: "foo", Port: 81, Protocol: "TCP"}}
	p := mustReconcile(t, svc, v4group(all, port81), ex, Options{})
	check(t, "U8", p, ex, counts{Updates: 3, Lengths: []int{100, 100, 50}})

	labelled := svc
	labelled.Labels = map[string]string{"foo": "bar"}
	p = mustReconcile(t, labelled, v4group(all, port80), ex, Options{})
	check(t, "U9", p, ex, counts{Updates: 3, Lengths: []int{100, 100, 50}})
	for _, s := range p.Updates {
		if s.Labels["foo"] != "bar" {
			t.Errorf("U9: labels %v lack foo=bar", s.Labels)
		}
	}

	reserved := svc
	reserved.Labels = map[string]string{LabelServiceName: "x", LabelManagedBy: "y", LabelHeadless: "z"}
	p = mustReconcile(t, reserved, v4group(all, port80), ex, Options{})
	check(t, "U10", p, ex, counts{Lengths: []int{100, 100, 50}})

	all = pods(300)
	ex = nil
	for i := range 10 {
		ex = append(ex, ownedSlice(fmt.Sprintf("s%02d", i), port80, all[i*30:(i+1)*30]))
	}
	p = mustReconcile(t, svc, v4group(all, port80), ex, Options{})
	check(t, "U11 first", p, ex, counts{Lengths: []int{30, 30, 30, 30, 30, 30, 30, 30, 30, 30}})
	p = mustReconcile(t, svc, v4group(all, port81), ex, Options{})
	check(t, "U11", p, ex, counts{Updates: 3, Deletes: 7, Lengths: []int{100, 100, 100}})
	if p.Added != 300 || p.Removed != 0 {
		t.Errorf("U11 added, removed = %d, %d, want 300, 0", p.Added, p.Removed)
	}
}

func TestUpstreamUpdatePacking(t *testing.T) { // U12
	all := pods(215)
	ex := []Slice{ownedSlice("s1", port80, all[0:80]), ownedSlice("s2", port80, all[100:120])}
	desired := slices.Concat(all[0:80], all[100:120], all[200:215])
	desired = slices.Clone(desired)
	for _, i := range []int{0, 10, 20, 30, 40, 50, 60, 70, 80, 90} {
		desired[i].Conditions = PodConditions(false, false, false)
	}
	p := mustReconcile(t, testService(), v4group(desired, port80), ex, Options{})
	check(t, "U12", p, ex, counts{Updates: 2, Lengths: []int{95, 20}})
	if p.Added != 15 {
		t.Errorf("U12 added = %d, want 15", p.Added)
	}
}

func TestUpstreamReplaceDeprecated(t *testing.T) { // U13
	all := pods(130)
	a, b := ownedSlice("ip-1", port80, all[:80]), ownedSlice("ip-2", port80, all[80:])
	a.AddressType, b.AddressType = "IP", "IP"
	ex := []Slice{a, b}
	p := mustReconcile(t, testService(), v4group(all, port80), ex, Options{})
	check(t, "U13", p, ex, counts{Creates: 2, Deletes: 2, Lengths: []int{100, 30}})
}

func TestUpstreamRecreation(t *testing.T) { // U14
	all := pods(1)
	owned := ownedSlice("s", port80, all)
	p := mustReconcile(t, testService(), v4group(all, port80), []Slice{owned}, Options{})
	check(t, "U14a", p, []Slice{owned}, counts{Lengths: []int{1}})
	other := owned
	other.Owners = []OwnerRef{{APIVersion: "v1", Kind: "Service", Name: "foo", UID: "different"}}
	p = mustReconcile(t, testService(), v4group(all, port80), []Slice{other}, Options{})
	check(t, "U14b", p, []Slice{other}, counts{Creates: 1, Deletes: 1, Lengths: []int{1}})
}

func TestUpstreamNamedPorts(t *testing.T) { // U15
	all := pods(300)
	byPort := map[int32][]Endpoint{}
	for i, e := range all {
		byPort[8080+int32(i%5)] = append(byPort[8080+int32(i%5)], e)
	}
	var desired []Group
	for port, eps := range byPort {
		desired = append(desired, Group{AddressType: IPv4, Ports: []Port{{Port: port, Protocol: "TCP"}}, Endpoints: eps})
	}
	p := mustReconcile(t, testService(), desired, nil, Options{})
	check(t, "U15", p, nil, counts{Creates: 5, Lengths: []int{60, 60, 60, 60, 60}})
}

func TestUpstreamMaxEndpointsPerSlice(t *testing.T) { // U16
	for _, tc := range []struct {
		max  int
		want []int
	}{
		{50, []int{50, 50, 50, 50, 50}},
		{80, []int{80, 80, 80, 10}},
		{150, []int{150, 100}},
		{250, []int{250}},
		{500, []int{250}},
	} {
		p := mustReconcile(t, testService(), v4group(pods(250), port80), nil, Options{MaxEndpointsPerSlice: tc.max})
		check(t, fmt.Sprintf("U16 max %d", tc.max), p, nil, counts{Creates: len(tc.want), Lengths: tc.want})
	}
}

func TestUpstreamMetrics(t *testing.T) { // U17
	all := pods(20)
	p := mustReconcile(t, testService(), v4group(all, port80), nil, Options{})
	ex := apply(p, nil)
	p = mustReconcile(t, testService(), v4group(all[:10], port80), ex, Options{})
	check(t, "U17", p, ex, counts{Updates: 1, Lengths: []int{10}})
	if p.Removed != 10 {
		t.Errorf("U17 removed = %d, want 10", p.Removed)
	}
}

func TestUpstreamPodMissingNode(t *testing.T) { // U18, the core's share
	// The adapter leaves out a pod whose node is missing (unless
	// publishNotReadyAddresses); the reconciler sees the rest.
	both := []Endpoint{podEndpoint(0, true), podEndpoint(1, true)}
	ex := []Slice{ownedSlice("s", port80, both)}
	p := mustReconcile(t, testService(), v4group(both[:1], port80), ex, Options{})
	check(t, "U18c", p, ex, counts{Updates: 1, Lengths: []int{1}})
	p = mustReconcile(t, testService(), v4group(nil, port80), ex, Options{})
	check(t, "U18f", p, ex, counts{Updates: 1, Lengths: []int{0}})
	if p.Removed != 2 {
		t.Errorf("U18f removed = %d, want 2", p.Removed)
	}
}

func TestUpstreamHeadlessNoPorts(t *testing.T) { // U19
	svc := testService()
	p := mustReconcile(t, svc, v4group(pods(1), []Port{}), nil, Options{})
	ex := apply(p, nil)
	ex[0].Ports = nil
	p = mustReconcile(t, svc, v4group(pods(1), []Port{}), ex, Options{})
	check(t, "U19", p, ex, counts{Lengths: []int{1}})
}

func TestDeletingServiceCreatesNothing(t *testing.T) {
	svc := testService()
	svc.Deleting = true
	p := mustReconcile(t, svc, v4group(pods(250), port80), nil, Options{})
	check(t, "deleting", p, nil, counts{})
}

func TestPlanRewrite(t *testing.T) {
	all := pods(3)
	ex := []Slice{ownedSlice("a", port80, all[:1]), ownedSlice("b", port80, all[1:])}
	p := mustReconcile(t, testService(), v4group(all, port80), ex, Options{})
	if len(p.Unchanged) != 2 || p.Writes() != 0 {
		t.Fatalf("plan: %d unchanged, %d writes; want 2, 0", len(p.Unchanged), p.Writes())
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	i := p.MoveToUpdates(0, at)
	u := &p.Updates[i]
	u.Endpoints[0].Hints = &Hints{ForZones: []string{"z"}}
	if u.Name != "a" || len(p.Unchanged) != 1 || p.Unchanged[0].Name != "b" || ex[0].Endpoints[0].Hints != nil ||
		u.Annotations[AnnotationTriggerTime] != "2026-01-01T00:00:00Z" {
		t.Errorf("Rewrite(0): updates %+v, unchanged %+v; the input must stay untouched", p.Updates, p.Unchanged)
	}
}

func TestReconcileRejectsBadInput(t *testing.T) {
	if _, err := NewReconciler(Options{MaxEndpointsPerSlice: 1001}); err == nil || !strings.Contains(err.Error(), "Options.MaxEndpointsPerSlice: 1001") {
		t.Errorf("NewReconciler(1001) error = %v, want the field and value named", err)
	}
	if _, err := NewReconciler(Options{MaxEndpointsPerSlice: -1}); err == nil {
		t.Error("NewReconciler(-1): no error")
	}
	svc := testService()
	dup := pods(2)
	dup[1] = dup[0]
	if _, err := Reconcile(svc, v4group(dup, port80), nil, Options{}); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("duplicate desired endpoint: error = %v", err)
	}
	bad := svc
	bad.Name = ""
	bad.AddressTypes = []AddressType{IPv4, "IPv5", IPv4}
	noAddr := pods(1)
	noAddr[0].Addresses = nil
	ex := []Slice{ownedSlice("", port80, nil), ownedSlice("x", port80, nil), ownedSlice("x", port80, nil)}
	_, err := Reconcile(bad, append(v4group(noAddr, port80), Group{AddressType: IPv6}), ex, Options{})
	for _, want := range []string{"Service.Name: must not be empty", `AddressTypes[1]: unknown address type "IPv5"`, `AddressTypes[2]: "IPv4" repeated`,
		`desired[1].AddressType: "IPv6" is not one of`, "desired[0].Endpoints[0].Addresses: must not be empty",
		"existing[0].Name: must not be empty", `existing[2].Name: "x" repeats existing[1]`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad input: error = %v\nwant it to contain %q", err, want)
		}
	}
}
