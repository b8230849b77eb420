package endpointslice_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
	"github.com/fairslice/fairslice/slicer"
)

// trial is what a user's module has: a fake clientset made to act as the
// API server with the exported helper, an informer whose store the test
// fills from the fake (so that it can also leave it stale), and a
// Writer.
type trial struct {
	t       *testing.T
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	w       *endpointslice.Writer
	svc     *corev1.Service
}

func newTrial(t *testing.T) *trial {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "vms", UID: "vms-uid"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.20", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	client := fake.NewClientset(svc)
	endpointslicetest.ActAsAPIServer(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	w, err := endpointslice.NewWriter(client, factory.Discovery().V1().EndpointSlices(),
		endpointslice.WriterOptions{ControllerName: "vms.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	tr := &trial{t: t, client: client, factory: factory, w: w, svc: svc}
	tr.catchUp()
	return tr
}

// catchUp makes the informer show what the API server holds.
func (tr *trial) catchUp() {
	tr.t.Helper()
	var objs []any
	for _, s := range tr.list() {
		objs = append(objs, s.DeepCopy())
	}
	if err := tr.factory.Discovery().V1().EndpointSlices().Informer().GetStore().Replace(objs, ""); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *trial) list() []discovery.EndpointSlice {
	tr.t.Helper()
	l, err := tr.client.DiscoveryV1().EndpointSlices("demo").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		tr.t.Fatal(err)
	}
	return l.Items
}

// sync syncs the VMs whose readiness is given (index: address
// 192.168.i/250.i%250+1) and returns the writes made, by verb.
func (tr *trial) sync(ready map[int]bool) (map[string]int, error) {
	tr.t.Helper()
	var eps []endpointslice.ExternalEndpoint
	for i := range 1000 {
		r, ok := ready[i]
		if !ok {
			continue
		}
		eps = append(eps, endpointslice.ExternalEndpoint{Addresses: []string{vmAddress(i)},
			Ports: []slicer.Port{{Name: "http", Port: 8080}}, Serving: r})
	}
	groups, err := endpointslice.GroupsFrom(tr.svc, eps)
	if err != nil {
		tr.t.Fatal(err)
	}
	before := len(tr.client.Actions())
	err = tr.w.Sync(context.Background(), tr.svc, groups)
	return writesSince(tr.client, before), err
}

func vmAddress(i int) string { return fmt.Sprintf("192.168.%d.%d", i/250, i%250+1) }

func writesSince(client *fake.Clientset, before int) map[string]int {
	out := map[string]int{}
	for _, a := range client.Actions()[before:] {
		if a.GetResource().Resource == "endpointslices" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out[a.GetVerb()]++
		}
	}
	return out
}

// check requires the API server's slices to hold exactly the VMs of want
// with their readiness, each once, in slices.
func (tr *trial) check(step string, want map[int]bool, slices int) {
	tr.t.Helper()
	list := tr.list()
	got := map[string]bool{}
	for _, s := range list {
		for _, e := range s.Endpoints {
			if _, dup := got[e.Addresses[0]]; dup {
				tr.t.Errorf("%s: endpoint %s in two slices", step, e.Addresses[0])
			}
			got[e.Addresses[0]] = e.Conditions.Ready != nil && *e.Conditions.Ready
		}
	}
	wantAddr := map[string]bool{}
	for i, r := range want {
		wantAddr[vmAddress(i)] = r
	}
	if len(list) != slices || len(got) != len(wantAddr) {
		tr.t.Errorf("%s: %d slices holding %d endpoints, want %d holding %d", step, len(list), len(got), slices, len(wantAddr))
	}
	for a, r := range wantAddr {
		if g, ok := got[a]; !ok || g != r {
			tr.t.Errorf("%s: endpoint %s ready=%v present=%v, want ready=%v", step, a, g, ok, r)
		}
	}
}

func allReady(n int) map[int]bool {
	m := map[int]bool{}
	for i := range n {
		m[i] = true
	}
	return m
}

// TestWriterTrialWithExportedHelper is the new user's trial, written with
// nothing but exported names: the lifecycle, a stale double sync and a
// stale delete, each with the documented result.
func TestWriterTrialWithExportedHelper(t *testing.T) {
	tr := newTrial(t)
	want := allReady(250)
	if w, err := tr.sync(want); err != nil || w["create"] != 3 || w["update"]+w["delete"] != 0 {
		t.Fatalf("first Sync of 250 = writes %v, %v; want 3 creates, nil", w, err)
	}
	tr.check("250 endpoints", want, 3)
	tr.catchUp()
	if w, err := tr.sync(want); err != nil || len(w) != 0 {
		t.Errorf("repeated Sync = writes %v, %v; want none, nil", w, err)
	}
	for _, i := range []int{0, 1, 2, 3, 4, 245, 246, 247, 248, 249} { // in the first and the last slice
		want[i] = false
	}
	if w, err := tr.sync(want); err != nil || w["update"] != 2 || w["create"]+w["delete"] != 0 {
		t.Errorf("Sync with 10 readiness flips = writes %v, %v; want 2 updates, nil", w, err)
	}
	tr.check("readiness flips", want, 3)
	tr.catchUp()
	for i := range 50 {
		delete(want, 100+i)
	}
	if _, err := tr.sync(want); err != nil {
		t.Errorf("Sync after removals = %v", err)
	}
	tr.check("removals", want, 3)
	tr.catchUp()

	// Stale double sync: the second Sync runs before the informer has
	// seen the first one's create.
	for i := 250; i < 350; i++ {
		want[i] = true
	}
	if w, err := tr.sync(want); err != nil || w["create"] == 0 {
		t.Fatalf("Sync adding 100 = writes %v, %v; want a create, nil", w, err)
	}
	n := len(tr.list())
	if w, err := tr.sync(want); !errors.Is(err, endpointslice.ErrStaleInformer) || len(w) != 0 {
		t.Errorf("Sync on a stale informer = writes %v, %v; want none, ErrStaleInformer", w, err)
	}
	if got := len(tr.list()); got != n {
		t.Errorf("stale Sync left %d slices, want %d (no duplicate)", got, n)
	}
	tr.check("stale double sync", want, n)

	// Stale delete: Delete before the informer has seen the create.
	before := len(tr.client.Actions())
	if err := tr.w.Delete(context.Background(), tr.svc); !errors.Is(err, endpointslice.ErrStaleInformer) {
		t.Errorf("Delete on a stale informer = %v, want ErrStaleInformer", err)
	}
	if w := writesSince(tr.client, before); len(w) != 0 {
		t.Errorf("Delete on a stale informer wrote %v, want nothing", w)
	}
	tr.catchUp()
	if err := tr.w.Delete(context.Background(), tr.svc); err != nil {
		t.Errorf("Delete = %v", err)
	}
	if got := tr.list(); len(got) != 0 {
		t.Errorf("Delete left %d slices, want 0", len(got))
	}
}

// TestWriterRefusesAPIServerWithoutUIDs guards the silent failure of a
// fake that names slices but sets no UID or generation: the
// stale-informer guard cannot work then, and Sync must say so rather
// than succeed and leave duplicates behind.
func TestWriterRefusesAPIServerWithoutUIDs(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "vms"},
		Spec: corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}}}
	client := fake.NewClientset(svc)
	n := 0
	client.PrependReactor("create", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*discovery.EndpointSlice)
		n++
		s.Name = fmt.Sprintf("%s%d", s.GenerateName, n) // a name, no UID, no generation
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	w, err := endpointslice.NewWriter(client, factory.Discovery().V1().EndpointSlices(),
		endpointslice.WriterOptions{ControllerName: "vms.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	groups, err := endpointslice.GroupsFrom(svc, []endpointslice.ExternalEndpoint{{Addresses: []string{"192.168.0.1"}, Serving: true}})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Sync(context.Background(), svc, groups)
	if err == nil || !strings.Contains(err.Error(), "ActAsAPIServer") {
		t.Errorf("Sync through a fake without UIDs = %v, want an error pointing to endpointslicetest.ActAsAPIServer", err)
	}
}
