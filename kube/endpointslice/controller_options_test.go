package endpointslice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/fairslice/fairslice/kube/internal/fixture"
	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
)

// secondController is another controller with opts on f's clientset and
// informers.
func (f *ctlFixture) secondController(opts ControllerOptions) *Controller {
	f.t.Helper()
	opts.EventRecorder = record.NewFakeRecorder(100)
	opts.Registerer = prometheus.NewRegistry()
	c, err := NewControllerWithOptions(context.Background(), f.factory.Core().V1().Pods(), f.factory.Core().V1().Services(),
		f.factory.Core().V1().Nodes(), f.factory.Discovery().V1().EndpointSlices(), f.client, opts)
	if err != nil {
		f.t.Fatalf("NewControllerWithOptions: %v", err)
	}
	f.t.Cleanup(func() { c.queue.ShutDown(); c.topoQueue.ShutDown() })
	return c
}

// sync runs c's sync of key, then makes the informer show the result.
func (f *ctlFixture) sync(c *Controller, key string) {
	f.t.Helper()
	if err := c.SyncService(context.Background(), key); err != nil {
		f.t.Fatalf("SyncService(%q) = %v, want nil", key, err)
	}
	f.syncSlicesToStore()
}

// deletePod removes a pod from the pod informer, as a watch event would.
func (f *ctlFixture) deletePod(name string) {
	f.t.Helper()
	store := f.factory.Core().V1().Pods().Informer().GetStore()
	obj, ok, err := store.GetByKey("ns/" + name)
	if err != nil || !ok {
		f.t.Fatalf("pod ns/%s not in the informer: %v", name, err)
	}
	if err := store.Delete(obj); err != nil {
		f.t.Fatal(err)
	}
}

// sliceWrites lists the EndpointSlice writes from action index from on,
// each as its verb and the managed-by label of the slice written (for a
// delete, of the slice of that name in managers).
func (f *ctlFixture) sliceWrites(from int, managers map[string]string) []string {
	var out []string
	for _, a := range f.client.Actions()[from:] {
		if a.GetResource().Resource != "endpointslices" {
			continue
		}
		switch a.GetVerb() {
		case "create", "update":
			// An update action is a CreateAction too (it has GetObject).
			s := a.(k8stesting.CreateAction).GetObject().(*discovery.EndpointSlice)
			out = append(out, a.GetVerb()+" "+s.Labels[discovery.LabelManagedBy])
		case "delete":
			out = append(out, "delete "+managers[a.(k8stesting.DeleteAction).GetName()])
		}
	}
	slices.Sort(out)
	return out
}

// managers maps the slices' names to their managed-by labels.
func managers(ss []discovery.EndpointSlice) map[string]string {
	out := map[string]string{}
	for _, s := range ss {
		out[s.Name] = s.Labels[discovery.LabelManagedBy]
	}
	return out
}

// endpointsByManager lists each managed-by label's endpoint addresses,
// sorted, with "(not ready)" after those not ready.
func endpointsByManager(ss []discovery.EndpointSlice) map[string][]string {
	out := map[string][]string{}
	for _, s := range ss {
		m := s.Labels[discovery.LabelManagedBy]
		for _, e := range s.Endpoints {
			a := e.Addresses[0]
			if e.Conditions.Ready == nil || !*e.Conditions.Ready {
				a += " (not ready)"
			}
			out[m] = append(out[m], a)
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// Two controllers with different ControllerName values on one clientset
// each write their own slices, labelled with their name, and neither
// updates nor deletes the other's: every write of each is to a slice of
// its own, and a sync that has nothing to change writes nothing though
// the other's slice is there.
func TestControllersWithDifferentNamesLeaveEachOtherAlone(t *testing.T) {
	const other = "fairslice-b.example"
	objs := []runtime.Object{fixture.Service("web"), fixture.Node("n1", "zone-a", "4")}
	for i := range 3 {
		objs = append(objs, fixture.Pod("web", i, i != 2, "n1"))
	}
	f := newCtlFixture(t, ControllerOptions{}, objs...)
	a := f.c
	b := f.secondController(ControllerOptions{ControllerName: other})
	all := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3 (not ready)"}
	steps := []struct {
		name       string
		do         func()
		wantWrites []string
		want       map[string][]string
	}{
		{"default syncs first", func() { f.sync(a, "ns/web") }, []string{"create " + ControllerName},
			map[string][]string{ControllerName: all}},
		{"the other syncs", func() { f.sync(b, "ns/web") }, []string{"create " + other},
			map[string][]string{ControllerName: all, other: all}},
		{"both sync again", func() { f.sync(a, "ns/web"); f.sync(b, "ns/web") }, nil,
			map[string][]string{ControllerName: all, other: all}},
		{"a pod goes, both sync", func() { f.deletePod("web-0"); f.sync(b, "ns/web"); f.sync(a, "ns/web") },
			[]string{"update " + ControllerName, "update " + other},
			map[string][]string{ControllerName: all[1:], other: all[1:]}},
		{"the Service's pods go, the other syncs", func() {
			f.deletePod("web-1")
			f.deletePod("web-2")
			f.sync(b, "ns/web")
		}, []string{"update " + other}, // emptied, kept as upstream keeps a placeholder
			map[string][]string{ControllerName: all[1:]}},
	}
	for _, step := range steps {
		from, before := len(f.client.Actions()), managers(f.slices())
		step.do()
		if diff := cmp.Diff(step.wantWrites, f.sliceWrites(from, before)); diff != "" {
			t.Errorf("%s: writes by managed-by label (-want +got):\n%s", step.name, diff)
		}
		if diff := cmp.Diff(step.want, endpointsByManager(f.slices())); diff != "" {
			t.Errorf("%s: endpoints by managed-by label (-want +got):\n%s", step.name, diff)
		}
	}
	for _, s := range f.slices() {
		if m := s.Labels[discovery.LabelManagedBy]; m != ControllerName && m != other {
			t.Errorf("slice %s managed-by = %q, want %q or %q", s.Name, m, ControllerName, other)
		}
	}
}

// Compact repacks the slices a sync rewrites anyway: three slices of 10
// that each lose 6 endpoints are three updates leaving 4, 4 and 4
// without it, and two updates and a delete leaving 8 and 4 with it (one
// slice fewer, no more writes).
func TestControllerCompact(t *testing.T) {
	type outcome struct {
		Writes  map[string]int
		Lengths []int
		Ready   int
	}
	for _, tc := range []struct {
		compact bool
		want    outcome
	}{
		{false, outcome{map[string]int{"update": 3}, []int{4, 4, 4}, 12}},
		{true, outcome{map[string]int{"update": 2, "delete": 1}, []int{8, 4}, 12}},
	} {
		t.Run(fmt.Sprintf("compact=%v", tc.compact), func(t *testing.T) {
			objs := []runtime.Object{fixture.Service("web"), fixture.Node("n1", "zone-a", "4")}
			for i := range 30 {
				objs = append(objs, fixture.Pod("web", i, true, "n1"))
			}
			f := newCtlFixture(t, ControllerOptions{MaxEndpointsPerSlice: 10, Compact: tc.compact}, objs...)
			f.sync(f.c, "ns/web")
			if got := f.writes(); !cmp.Equal(got, map[string]int{"create": 3}) {
				t.Fatalf("first sync writes = %v, want 3 creates", got)
			}
			for _, s := range f.slices() {
				for _, e := range s.Endpoints[:6] {
					f.deletePod(e.TargetRef.Name)
				}
			}
			f.client.ClearActions()
			f.sync(f.c, "ns/web")
			var got outcome
			got.Writes = f.writes()
			for _, s := range f.slices() {
				got.Lengths = append(got.Lengths, len(s.Endpoints))
			}
			slices.Sort(got.Lengths)
			slices.Reverse(got.Lengths)
			got.Ready = len(endpointSet(f.slices()))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("after each slice lost 6 of its 10 (-want +got):\n%s", diff)
			}
		})
	}
}

// hintFixture is a Service with Auto hints and n ready pods spread
// round-robin over three nodes of equal CPU in zones a, b and c.
func hintFixture(t *testing.T, opts ControllerOptions, n int) *ctlFixture {
	t.Helper()
	svc := fixture.Service("web", func(s *corev1.Service) {
		s.Annotations = map[string]string{topology.AnnotationTopologyMode: "Auto"}
	})
	objs := []runtime.Object{svc, fixture.Node("a", "a", "4"), fixture.Node("b", "b", "4"), fixture.Node("c", "c", "4")}
	for i := range n {
		objs = append(objs, fixture.Pod("web", i, true, string(rune('a'+i%3))))
	}
	f := newCtlFixture(t, opts, objs...)
	f.c.updateCapacity(context.Background())
	return f
}

// zoneHints maps each endpoint's address to its zone and the zones its
// hints name ("zone>" for no hints).
func zoneHints(ss []discovery.EndpointSlice) map[string]string {
	out := map[string]string{}
	for _, s := range ss {
		for _, e := range s.Endpoints {
			var zones []string
			if e.Hints != nil {
				for _, z := range e.Hints.ForZones {
					zones = append(zones, z.Name)
				}
			}
			out[e.Addresses[0]] = *e.Zone + ">" + strings.Join(zones, ",")
		}
	}
	return out
}

// ownZoneHints is zoneHints with every one of the n pods' endpoints
// hinted for its own zone.
func ownZoneHints(n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		z := string(rune('a' + i%3))
		out[fixture.Pod("web", i, true, z).Status.PodIP] = z + ">" + z
	}
	return out
}

// The Allocator reaches the hints: 11 endpoints over three equal zones
// (4, 4, 3) are too few for upstream's allocation (each zone needs 4), so
// the default writes no hints; AllocatorMinCrossZone hints every endpoint,
// grouping zones (here a and c serve each other, b itself).
func TestControllerAllocator(t *testing.T) {
	noHints := map[string]string{}
	for ip, h := range ownZoneHints(11) {
		noHints[ip] = h[:2]
	}
	minCross := map[string]string{}
	for ip, h := range ownZoneHints(11) {
		minCross[ip] = h
		if z := h[:1]; z != "b" {
			minCross[ip] = z + ">a,c"
		}
	}
	for _, tc := range []struct {
		name string
		opts ControllerOptions
		want map[string]string
	}{
		{"default", ControllerOptions{}, noHints},
		{"min-cross-zone", ControllerOptions{Allocator: topology.AllocatorMinCrossZone}, minCross},
	} {
		f := hintFixture(t, tc.opts, 11)
		f.sync(f.c, "ns/web")
		if diff := cmp.Diff(tc.want, zoneHints(f.slices())); diff != "" {
			t.Errorf("%s: zone>hints by address (-want +got):\n%s", tc.name, diff)
		}
	}
}

// Hysteresis reaches the hints: with AllocatorMinCrossZone, 12 endpoints
// over three equal zones are hinted for their own zones; when one goes,
// 11 no longer fit within the overload threshold and the hints are
// regrouped, unless a hysteresis of 0.1 keeps the previous ones.
func TestControllerHysteresis(t *testing.T) {
	kept := ownZoneHints(11)
	for _, tc := range []struct {
		hysteresis float64
		wantKept   bool
	}{{0, false}, {0.1, true}} {
		f := hintFixture(t, ControllerOptions{Allocator: topology.AllocatorMinCrossZone, Hysteresis: tc.hysteresis}, 12)
		f.sync(f.c, "ns/web")
		if diff := cmp.Diff(ownZoneHints(12), zoneHints(f.slices())); diff != "" {
			t.Fatalf("hysteresis %v: first sync's zone>hints (-want +got):\n%s", tc.hysteresis, diff)
		}
		f.deletePod("web-11")
		f.sync(f.c, "ns/web")
		got := zoneHints(f.slices())
		if tc.wantKept {
			if diff := cmp.Diff(kept, got); diff != "" {
				t.Errorf("hysteresis %v: zone>hints after a pod went (-want +got):\n%s", tc.hysteresis, diff)
			}
		} else if cmp.Equal(kept, got) {
			t.Errorf("hysteresis %v: hints kept after a pod went (%v); the case does not exercise hysteresis", tc.hysteresis, got)
		}
	}
}

// TestWriteSendsObjectsOfUnlistedTypes: write sends a plan's objects per
// address type of the plan; objects of a type the plan does not list (no
// plan gives such, but one built by hand could) are sent all the same,
// and only the listed types count as written.
func TestWriteSendsObjectsOfUnlistedTypes(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	old := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-old", UID: "old-uid", Generation: 1}, AddressType: discovery.AddressTypeIPv6}
	upd := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-upd", UID: "upd-uid", Generation: 1}, AddressType: discovery.AddressTypeIPv6}
	f := newCtlFixture(t, ControllerOptions{}, old, upd)
	create := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}, AddressType: discovery.AddressTypeIPv4}
	create6 := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}, AddressType: discovery.AddressTypeIPv6}
	written, err := f.c.write(context.Background(), svc, []slicer.TypeChurn{{AddressType: slicer.IPv4}},
		[]*discovery.EndpointSlice{create, create6}, []*discovery.EndpointSlice{upd.DeepCopy()}, []*discovery.EndpointSlice{old})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"create": 2, "update": 1, "delete": 1}, f.writes()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[slicer.AddressType]bool{slicer.IPv4: true}, written); diff != "" {
		t.Errorf("written types (-want +got):\n%s", diff)
	}
}
