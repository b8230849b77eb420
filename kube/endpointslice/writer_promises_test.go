package endpointslice

import (
	"context"
	"errors"
	"testing"

	"github.com/fairslice/fairslice/slicer"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// TestWriterStaleWhileADeletedSliceIsStillListed: a Sync after the
// Writer deleted a slice, while the informer still lists it, finds the
// informer stale and writes nothing.
func TestWriterStaleWhileADeletedSliceIsStillListed(t *testing.T) {
	f := newWriterFixture(t, WriterOptions{MaxEndpointsPerSlice: 1})
	if _, err := f.sync(vm(1, true), vm(2, true)); err != nil {
		t.Fatal(err)
	}
	f.syncSlicesToStore()
	if w, err := f.sync(vm(1, true)); err != nil || len(w["delete"]) != 1 || len(w) != 1 {
		t.Fatalf("Sync dropping vm 2 = writes %v, %v; want one delete", w, err)
	}
	// The informer has not seen the delete.
	if w, err := f.sync(vm(1, true), vm(3, true)); !errors.Is(err, ErrStaleInformer) || len(w) != 0 {
		t.Errorf("Sync while the deleted slice is still listed = writes %v, %v; want none, ErrStaleInformer", w, err)
	}
}

// TestWriterOwnWritesAreNoNews: the informer events of the Writer's own
// creates and updates do not call Requeue; a change by someone else
// does.
func TestWriterOwnWritesAreNoNews(t *testing.T) {
	f := newWriterFixture(t, WriterOptions{})
	var requeued []string
	h := sliceEvents{managedBy: writerName, tracker: f.w.tracker, enqueue: func(key string) { requeued = append(requeued, key) }}.funcs()
	if _, err := f.sync(vm(1, true)); err != nil {
		t.Fatal(err)
	}
	created := f.slices()[0]
	h.AddFunc(&created)
	f.syncSlicesToStore()
	if _, err := f.sync(vm(1, true), vm(2, true)); err != nil {
		t.Fatal(err)
	}
	updated := f.slices()[0]
	h.UpdateFunc(&created, &updated)
	if len(requeued) != 0 {
		t.Errorf("Requeue(%v) on the Writer's own create and update, want none", requeued)
	}
	foreign := updated.DeepCopy()
	foreign.Generation++
	foreign.Endpoints = nil
	h.UpdateFunc(&updated, foreign)
	if len(requeued) != 1 || requeued[0] != "ns/vms" {
		t.Errorf("Requeue calls after someone else changed the slice = %v, want [ns/vms]", requeued)
	}
}

// TestWriterDeleteForgetsTheService: Delete drops what the Writer keeps
// about the Service, as its doc says.
func TestWriterDeleteForgetsTheService(t *testing.T) {
	f := newWriterFixture(t, WriterOptions{})
	if _, err := f.sync(vm(1, true)); err != nil {
		t.Fatal(err)
	}
	f.syncSlicesToStore()
	if err := f.w.Delete(context.Background(), f.svc); err != nil {
		t.Fatal(err)
	}
	f.w.mu.Lock()
	_, kept := f.w.services["ns/vms"]
	f.w.mu.Unlock()
	if kept {
		t.Error("Delete kept the Service's state")
	}
	if n := len(f.slices()); n != 0 {
		t.Errorf("Delete left %d slices, want 0", n)
	}
}

// TestWriterIgnoresSlicesBeingDeleted: a slice of the Writer's that is
// being deleted (a finalizer holds it) is neither updated nor counted as
// holding endpoints: the Sync creates a new slice.
func TestWriterIgnoresSlicesBeingDeleted(t *testing.T) {
	now := metav1.Now()
	deleting := otherSlice("vms-going", writerName)
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{"example.com/hold"}
	deleting.Endpoints = []discovery.Endpoint{{Addresses: []string{"10.1.0.1"}}}
	f := newWriterFixture(t, WriterOptions{}, deleting)
	w, err := f.sync(vm(1, true))
	if err != nil || len(w["create"]) != 1 || len(w) != 1 {
		t.Errorf("Sync beside a slice being deleted = writes %v, %v; want one create and nothing else", w, err)
	}
}

// TestWriterReportsAFailedDeleteOfAGoneAddressType: when the Service
// drops an IP family, the Writer deletes that family's slices, and a
// delete the API server refuses is returned from Sync, not dropped.
func TestWriterReportsAFailedDeleteOfAGoneAddressType(t *testing.T) {
	f := newWriterFixture(t, WriterOptions{})
	f.svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	v6 := ExternalEndpoint{Addresses: []string{"2001:db8::1"}, Serving: true, Ports: []slicer.Port{{Name: "http", Port: 8080}}}
	if _, err := f.sync(vm(1, true), v6); err != nil {
		t.Fatal(err)
	}
	f.syncSlicesToStore()
	f.svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	refused := errors.New("refused by the test")
	f.client.PrependReactor("delete", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, refused
	})
	w, err := f.sync(vm(1, true))
	if !errors.Is(err, refused) || len(w["delete"]) != 1 {
		t.Errorf("Sync after IPv6 left the Service: writes %v, err %v; want the IPv6 slice's delete tried and its error returned", w, err)
	}
}
