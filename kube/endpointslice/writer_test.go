package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
	"github.com/fairslice/fairslice/kube/internal/fixture"
	"github.com/fairslice/fairslice/slicer"
)

const writerName = "vms.example.com"

// writerFixture is a Writer on a fake clientset whose informer is never
// started: the test decides what the informer shows (syncSlicesToStore).
type writerFixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	w        *Writer
	svc      *corev1.Service
	recorder *record.FakeRecorder
	reg      *prometheus.Registry
	requeued []string
}

func newWriterFixture(t *testing.T, opts WriterOptions, objs ...runtime.Object) *writerFixture {
	t.Helper()
	svc := fixture.Service("vms", func(s *corev1.Service) { s.Spec.Selector = nil })
	f := &writerFixture{t: t, client: fake.NewClientset(append([]runtime.Object{svc}, objs...)...), svc: svc,
		recorder: record.NewFakeRecorder(100), reg: prometheus.NewRegistry()}
	endpointslicetest.ActAsAPIServer(f.client)
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	if opts.ControllerName == "" {
		opts.ControllerName = writerName
	}
	opts.EventRecorder = f.recorder
	opts.Registerer = f.reg
	opts.Requeue = func(key string) { f.requeued = append(f.requeued, key) }
	w, err := NewWriter(f.client, f.factory.Discovery().V1().EndpointSlices(), opts)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	f.w = w
	f.syncSlicesToStore()
	return f
}

// syncSlicesToStore makes the informer show exactly the slices in the
// fake API server.
func (f *writerFixture) syncSlicesToStore() { replaceSlices(f.t, f.client, f.factory) }

func (f *writerFixture) slices() []discovery.EndpointSlice { return listSlices(f.t, f.client) }

// sync runs one Sync of the fixture's Service with these VMs and
// returns the writes it made, by verb and slice name.
func (f *writerFixture) sync(vms ...ExternalEndpoint) (map[string][]string, error) {
	f.t.Helper()
	groups, err := GroupsFrom(f.svc, vms)
	if err != nil {
		f.t.Fatal(err)
	}
	f.client.ClearActions()
	err = f.w.Sync(context.Background(), f.svc, groups)
	return f.writes(), err
}

// writes lists the fake API server's slice writes by verb (create,
// update, delete), with the name of each slice written.
func (f *writerFixture) writes() map[string][]string {
	out := map[string][]string{}
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource != "endpointslices" {
			continue
		}
		// Create and update actions have the same methods: by verb.
		switch v := a.GetVerb(); v {
		case "create":
			out[v] = append(out[v], a.(k8stesting.CreateAction).GetObject().(*discovery.EndpointSlice).GenerateName)
		case "update":
			out[v] = append(out[v], a.(k8stesting.UpdateAction).GetObject().(*discovery.EndpointSlice).Name)
		case "delete":
			out[v] = append(out[v], a.(k8stesting.DeleteAction).GetName())
		}
	}
	return out
}

func vm(i int, serving bool) ExternalEndpoint {
	return ExternalEndpoint{Addresses: []string{fmt.Sprintf("10.1.0.%d", i)}, Serving: serving,
		Ports: []slicer.Port{{Name: "http", Port: 8080}}}
}

// endpointsOf is the Writer's endpoints of the Service by address, with
// readiness, and the number of its slices.
func (f *writerFixture) endpointsOf() (map[string]bool, int) {
	var mine []discovery.EndpointSlice
	for _, s := range f.slices() {
		if s.Labels[discovery.LabelManagedBy] == writerName {
			mine = append(mine, s)
		}
	}
	return endpointSet(mine), len(mine)
}

func TestWriterCreatesUpdatesDeletes(t *testing.T) {
	f := newWriterFixture(t, WriterOptions{MaxEndpointsPerSlice: 2})
	w, err := f.sync(vm(1, true), vm(2, true), vm(3, true))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(w["create"]); got != 2 || len(w["update"])+len(w["delete"]) != 0 {
		t.Errorf("first Sync writes %v, want 2 creates", w)
	}
	f.syncSlicesToStore()
	eps, n := f.endpointsOf()
	if diff := cmp.Diff(map[string]bool{"10.1.0.1": true, "10.1.0.2": true, "10.1.0.3": true}, eps); diff != "" || n != 2 {
		t.Errorf("after the first Sync: %d slices, endpoints (-want +got):\n%s", n, diff)
	}
	for _, s := range f.slices() {
		if got := s.Labels[discovery.LabelServiceName]; got != "vms" {
			t.Errorf("slice %s: service-name label %q, want vms", s.Name, got)
		}
		if got := s.Annotations[slicer.AnnotationTriggerTime]; got == "" {
			t.Errorf("slice %s has no %s annotation", s.Name, slicer.AnnotationTriggerTime)
		}
	}

	if w, err := f.sync(vm(1, true), vm(2, true), vm(3, true)); err != nil || len(w) != 0 {
		t.Errorf("Sync of the same endpoints = %v writes %v, want none", err, w)
	}

	w, err = f.sync(vm(1, true), vm(2, true), vm(3, false))
	if err != nil || len(w["update"]) != 1 || len(w) != 1 {
		t.Errorf("Sync with one VM not serving = %v writes %v, want 1 update", err, w)
	}
	f.syncSlicesToStore()
	if eps, _ := f.endpointsOf(); eps["10.1.0.3"] {
		t.Errorf("10.1.0.3 is ready after it stopped serving")
	}

	w, err = f.sync(vm(1, true))
	if err != nil || len(w["delete"])+len(w["update"]) != 2 || len(w["create"]) != 0 {
		t.Errorf("Sync with two VMs gone = %v writes %v, want an update and a delete", err, w)
	}
	f.syncSlicesToStore()
	if eps, n := f.endpointsOf(); len(eps) != 1 || n != 1 {
		t.Errorf("after two VMs went: %d slices with %v, want one slice with 10.1.0.1", n, eps)
	}

	f.client.ClearActions()
	if err := f.w.Delete(context.Background(), f.svc); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w["delete"]) != 1 || len(w) != 1 {
		t.Errorf("Delete writes %v, want 1 delete", w)
	}
	f.syncSlicesToStore()
	if _, n := f.endpointsOf(); n != 0 {
		t.Errorf("after Delete: %d slices, want 0", n)
	}
	if got := testutil.ToFloat64(f.w.metrics.syncs.WithLabelValues("success")); got != 4 {
		t.Errorf("endpoint_slice_writer_syncs{result=success} = %v, want 4 (one per Sync)", got)
	}
}

// otherSlice is a slice of the Service managed by someone else.
func otherSlice(name, managedBy string) *discovery.EndpointSlice {
	return &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 1,
			Labels:          map[string]string{discovery.LabelServiceName: "vms", discovery.LabelManagedBy: managedBy},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "vms", UID: "vms-uid"}}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   []discovery.Endpoint{{Addresses: []string{"10.9.9.9"}}},
	}
}

// TestWriterLeavesOtherManagersAlone: slices of the same Service managed
// by kube-controller-manager, the mirroring controller and another
// writer are never updated or deleted, by Sync or by Delete.
func TestWriterLeavesOtherManagersAlone(t *testing.T) {
	others := []runtime.Object{
		otherSlice("vms-kcm", ControllerName),
		otherSlice("vms-mirror", MirroringControllerName),
		otherSlice("vms-other", "other-writer.example.com"),
	}
	f := newWriterFixture(t, WriterOptions{}, others...)
	touched := func(w map[string][]string) []string {
		var out []string
		for verb, names := range w {
			for _, n := range names {
				if n == "vms-kcm" || n == "vms-mirror" || n == "vms-other" {
					out = append(out, verb+" "+n)
				}
			}
		}
		return out
	}
	for _, vms := range [][]ExternalEndpoint{{vm(1, true)}, {vm(1, true), vm(2, false)}, nil} {
		w, err := f.sync(vms...)
		if err != nil {
			t.Fatal(err)
		}
		if got := touched(w); got != nil {
			t.Errorf("Sync(%d VMs) wrote other managers' slices: %v", len(vms), got)
		}
		f.syncSlicesToStore()
	}
	f.client.ClearActions()
	if err := f.w.Delete(context.Background(), f.svc); err != nil {
		t.Fatal(err)
	}
	if got := touched(f.writes()); got != nil {
		t.Errorf("Delete wrote other managers' slices: %v", got)
	}
	f.syncSlicesToStore()
	if got := len(f.slices()); got != 3 {
		t.Errorf("%d slices left after Delete, want the 3 of other managers", got)
	}
	if len(f.requeued) != 0 {
		t.Errorf("Requeue called for %v, want never (only other managers' slices changed)", f.requeued)
	}
}

// TestWriterStaleInformer: a Sync whose informer has not seen the
// Writer's last writes writes nothing and fails with ErrStaleInformer,
// so no duplicate slice is created; once the informer catches up the
// Sync goes through.
func TestWriterStaleInformer(t *testing.T) {
	f := newWriterFixture(t, WriterOptions{})
	if _, err := f.sync(vm(1, true)); err != nil {
		t.Fatal(err)
	}
	w, err := f.sync(vm(1, true), vm(2, true))
	if !errors.Is(err, ErrStaleInformer) || len(w) != 0 {
		t.Errorf("Sync before the informer saw the create = %v writes %v, want ErrStaleInformer and none", err, w)
	}
	if err := f.w.Delete(context.Background(), f.svc); !errors.Is(err, ErrStaleInformer) {
		t.Errorf("Delete before the informer saw the create = %v, want ErrStaleInformer", err)
	}
	f.syncSlicesToStore()
	w, err = f.sync(vm(1, true), vm(2, true))
	if err != nil || len(w["update"]) != 1 || len(w) != 1 {
		t.Errorf("Sync after the informer caught up = %v writes %v, want 1 update", err, w)
	}
	f.syncSlicesToStore()
	if _, n := f.endpointsOf(); n != 1 {
		t.Errorf("%d slices, want 1 (no duplicate)", n)
	}
	if got := testutil.ToFloat64(f.w.metrics.syncs.WithLabelValues("stale")); got != 1 {
		t.Errorf("endpoint_slice_writer_syncs{result=stale} = %v, want 1", got)
	}
}

// TestWriterRequeuesOnForeignChange: with the informer running, a change
// to one of the Writer's slices that the Writer did not make calls
// Requeue with the Service.
func TestWriterRequeuesOnForeignChange(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client := fake.NewClientset()
	endpointslicetest.ActAsAPIServer(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	requeued := make(chan string, 10)
	inf := factory.Discovery().V1().EndpointSlices()
	w, err := NewWriter(client, inf, WriterOptions{ControllerName: writerName, Requeue: func(key string) { requeued <- key }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer func() { cancel(); factory.Shutdown() }()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	svc := fixture.Service("vms", func(s *corev1.Service) { s.Spec.Selector = nil })
	groups, err := GroupsFrom(svc, []ExternalEndpoint{vm(1, true)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(ctx, svc, groups); err != nil {
		t.Fatal(err)
	}
	var mine *discovery.EndpointSlice
	for mine == nil {
		if list, _ := inf.Lister().List(labels.Everything()); len(list) == 1 {
			mine = list[0].DeepCopy()
		} else if ctx.Err() != nil {
			t.Fatal("the informer never showed the Writer's slice")
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	// The informer may deliver the Writer's own create before Create
	// returns (and the tracker knows it), as with upstream's tracker: a
	// Requeue then is allowed, and drained.
	for len(requeued) > 0 {
		<-requeued
	}
	mine.Endpoints = nil // someone else empties it
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, mine, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case key := <-requeued:
		if key != "ns/vms" {
			t.Errorf("Requeue(%q), want ns/vms", key)
		}
	case <-ctx.Done():
		t.Fatal("no Requeue after someone else changed the Writer's slice")
	}
}

// TestWriterOwner: with WriterOptions.Owner the slices reference the
// custom owner as their controller, and a slice of the Writer's owned by
// the Service instead is deleted.
func TestWriterOwner(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Kind: "ServiceImport"}
	stray := otherSlice("vms-stray", writerName)
	f := newWriterFixture(t, WriterOptions{Owner: func(svc *corev1.Service) (SliceOwner, error) {
		return SliceOwner{GroupVersionKind: gvk, Name: svc.Name, UID: "import-uid"}, nil
	}}, stray)
	w, err := f.sync(vm(1, true))
	if err != nil {
		t.Fatal(err)
	}
	// Not owned, the stray slice is not recycled (as upstream): a
	// create and a delete.
	if diff := cmp.Diff(map[string][]string{"create": {"vms-"}, "delete": {"vms-stray"}}, w); diff != "" {
		t.Errorf("Sync writes (-want +got):\n%s", diff)
	}
	f.syncSlicesToStore()
	slices := f.slices()
	if len(slices) != 1 {
		t.Fatalf("%d slices, want 1", len(slices))
	}
	want := []metav1.OwnerReference{{APIVersion: "multicluster.x-k8s.io/v1alpha1", Kind: "ServiceImport", Name: "vms", UID: "import-uid", Controller: ptr(true)}}
	if diff := cmp.Diff(want, slices[0].OwnerReferences); diff != "" {
		t.Errorf("owner references (-want +got):\n%s", diff)
	}
	if w, err := f.sync(vm(1, true)); err != nil || len(w) != 0 {
		t.Errorf("second Sync = %v writes %v, want none (the owned slice is kept)", err, w)
	}

	f = newWriterFixture(t, WriterOptions{Owner: func(*corev1.Service) (SliceOwner, error) {
		return SliceOwner{}, errors.New("no ServiceImport yet")
	}})
	if _, err := f.sync(vm(1, true)); err == nil || !strings.Contains(err.Error(), "no ServiceImport yet") {
		t.Errorf("Sync with a failing Owner = %v, want its error", err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestWriterCoalesceWrites: a Sync too soon after a write is held back
// (and counted as a successful sync); the next one writes every change.
func TestWriterCoalesceWrites(t *testing.T) {
	f := newWriterFixture(t, WriterOptions{CoalesceWrites: time.Minute})
	now := fixture.Created.Time
	f.w.now = func() time.Time { return now }
	if _, err := f.sync(vm(1, true)); err != nil {
		t.Fatal(err)
	}
	f.syncSlicesToStore()
	now = now.Add(10 * time.Second)
	w, err := f.sync(vm(1, true), vm(2, true))
	var held *HeldError
	if !errors.As(err, &held) || held.RetryAfter != 50*time.Second || len(w) != 0 {
		t.Fatalf("Sync 10 s after a write = %v writes %v, want a HeldError of 50s and none", err, w)
	}
	// The docs' choice: a held sync counts as a successful one, as in
	// the controller.
	if got := testutil.ToFloat64(f.w.metrics.syncs.WithLabelValues("success")); got != 2 {
		t.Errorf("endpoint_slice_writer_syncs{result=success} after a write and a held sync = %v, want 2", got)
	}
	now = now.Add(held.RetryAfter)
	w, err = f.sync(vm(1, true), vm(2, true))
	if err != nil || len(w["update"]) != 1 {
		t.Fatalf("Sync when the time is up = %v writes %v, want 1 update", err, w)
	}
	f.syncSlicesToStore()
	want := fixture.Created.Time.Add(10 * time.Second).Format(time.RFC3339)
	if got := f.slices()[0].Annotations[slicer.AnnotationTriggerTime]; got != want {
		t.Errorf("trigger time %s, want the held Sync's %s", got, want)
	}
}

func TestNewWriterRefusesBadOptions(t *testing.T) {
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Discovery().V1().EndpointSlices()
	for _, tc := range []struct {
		opts WriterOptions
		want []string
	}{
		{WriterOptions{}, []string{`ControllerName "": required`}},
		{WriterOptions{ControllerName: ControllerName}, []string{`ControllerName "endpointslice-controller.k8s.io": is kube-controller-manager's`}},
		{WriterOptions{ControllerName: MirroringControllerName}, []string{`ControllerName "endpointslicemirroring-controller.k8s.io": is kube-controller-manager's`}},
		{WriterOptions{ControllerName: "not a label/value"}, []string{`ControllerName "not a label/value"`}},
		{WriterOptions{ControllerName: writerName, MaxEndpointsPerSlice: 1001, CoalesceWrites: -1, Hysteresis: 11, Allocator: 7},
			[]string{"MaxEndpointsPerSlice 1001", "CoalesceWrites -1ns", "Hysteresis 11", "Allocator 7"}},
	} {
		_, err := NewWriter(fake.NewClientset(), inf, tc.opts)
		if err == nil {
			t.Errorf("NewWriter(%+v) = nil error, want %q", tc.opts, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("NewWriter(%+v) = %v, want it to name %q", tc.opts, err, w)
			}
		}
	}
	if _, err := NewWriter(nil, nil, WriterOptions{ControllerName: writerName}); err == nil ||
		!strings.Contains(err.Error(), "client is nil") || !strings.Contains(err.Error(), "endpointSliceInformer is nil") {
		t.Errorf("NewWriter(nil, nil) = %v, want both named", err)
	}
	if _, err := NewWriter(fake.NewClientset(), inf, WriterOptions{ControllerName: writerName}); err != nil {
		t.Errorf("NewWriter(valid) = %v", err)
	}
}

func TestGroupsFrom(t *testing.T) {
	svc := fixture.Service("vms", func(s *corev1.Service) {
		s.Spec.Selector = nil
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	})
	http := []slicer.Port{{Name: "http", Port: 80}}
	groups, err := GroupsFrom(svc, []ExternalEndpoint{
		{Addresses: []string{"10.0.0.1"}, Ports: http, Serving: true, Zone: "a"},
		{Addresses: []string{"2001:db8:0:0::1"}, Ports: http, Serving: true, Terminating: true},
		{Addresses: []string{"10.0.0.2"}, Ports: []slicer.Port{{Name: "http", Port: 80, Protocol: "TCP"}}},
		{Addresses: []string{"10.0.0.3"}, Ports: []slicer.Port{{Name: "http", Port: 81}}, Serving: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	tcp := []slicer.Port{{Name: "http", Port: 80, Protocol: "TCP"}}
	ready := slicer.PodConditions(true, false, false)
	want := []slicer.Group{
		{AddressType: slicer.IPv4, Ports: tcp, Endpoints: []slicer.Endpoint{
			{Addresses: []string{"10.0.0.1"}, Zone: "a", Conditions: ready},
			{Addresses: []string{"10.0.0.2"}, Conditions: slicer.PodConditions(false, false, false)},
		}},
		{AddressType: slicer.IPv6, Ports: tcp, Endpoints: []slicer.Endpoint{
			{Addresses: []string{"2001:db8::1"}, Conditions: slicer.PodConditions(true, true, false)},
		}},
		{AddressType: slicer.IPv4, Ports: []slicer.Port{{Name: "http", Port: 81, Protocol: "TCP"}}, Endpoints: []slicer.Endpoint{
			{Addresses: []string{"10.0.0.3"}, Conditions: ready},
		}},
	}
	if diff := cmp.Diff(want, groups); diff != "" {
		t.Errorf("GroupsFrom (-want +got):\n%s", diff)
	}

	v4only := fixture.Service("vms")
	_, err = GroupsFrom(v4only, []ExternalEndpoint{
		{Addresses: []string{"10.0.0.1"}},
		{},
		{Addresses: []string{"not an address"}},
		{Addresses: []string{"10.0.0.1", "db.example.com"}},
		{Addresses: []string{"2001:db8::1"}},
	})
	for _, w := range []string{"endpoints[1] []: no addresses", `endpoints[2] [not an address]`, "endpoints[3]", "types IPv4 and FQDN",
		"endpoints[4] [2001:db8::1]: address type IPv6 is not one of the Service's [IPv4]"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("GroupsFrom(bad endpoints) = %v, want it to name %q", err, w)
		}
	}
	if err != nil && strings.Contains(err.Error(), "endpoints[0]") {
		t.Errorf("GroupsFrom(bad endpoints) = %v, names the good endpoints[0]", err)
	}
}

// TestWriterConcurrentSyncs: Syncs of several Services at once, each
// Service synced by two goroutines at once, leave every Service with one
// slice (the Syncs of one Service take turns, and the second finds the
// informer stale rather than creating a duplicate). Run with -race.
func TestWriterConcurrentSyncs(t *testing.T) {
	f := newWriterFixture(t, WriterOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := []string{"a", "b", "c"}
	errs := make(chan error, 2*len(names))
	for _, name := range names {
		svc := fixture.Service(name, func(s *corev1.Service) { s.Spec.Selector = nil })
		groups, err := GroupsFrom(svc, []ExternalEndpoint{vm(1, true)})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			go func() { errs <- f.w.Sync(ctx, svc, groups) }()
		}
	}
	for range 2 * len(names) {
		select {
		case err := <-errs:
			if err != nil && !errors.Is(err, ErrStaleInformer) {
				t.Errorf("Sync = %v, want nil or ErrStaleInformer", err)
			}
		case <-ctx.Done():
			t.Fatal("Syncs did not return")
		}
	}
	perService := map[string]int{}
	for _, s := range f.slices() {
		perService[s.Labels[discovery.LabelServiceName]]++
	}
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 1, "c": 1}, perService); diff != "" {
		t.Errorf("slices per Service (-want +got):\n%s", diff)
	}
}

// TestWriterMetricsShareARegistry: two Writers register their
// endpoint_slice_writer_* metrics on one registry, told apart by the
// managed_by label.
func TestWriterMetricsShareARegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Discovery().V1().EndpointSlices()
	for _, name := range []string{"a.example.com", "b.example.com"} {
		if _, err := NewWriter(fake.NewClientset(), inf, WriterOptions{ControllerName: name, Registerer: reg}); err != nil {
			t.Fatalf("NewWriter(%s) on a shared registry: %v", name, err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range families {
		if mf.GetName() != "endpoint_slice_writer_num_endpoint_slices" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName()+"="+l.GetValue())
			}
		}
	}
	if diff := cmp.Diff([]string{"managed_by=a.example.com", "managed_by=b.example.com"}, got); diff != "" {
		t.Errorf("endpoint_slice_writer_num_endpoint_slices series (-want +got):\n%s", diff)
	}
}
