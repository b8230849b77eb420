//lint:file-ignore SA1019 the mirroring controller exists to read the deprecated core/v1 Endpoints API

package endpointslice

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
	"github.com/fairslice/fairslice/slicer"
)

func TestEndpointsFromAPI(t *testing.T) {
	node, app := "n1", "http"
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext", UID: "u", Labels: map[string]string{"a": "b"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses:         []corev1.EndpointAddress{{IP: "10.0.0.1", Hostname: "h", NodeName: &node, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "p", UID: "pu"}}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.2"}},
			Ports:             []corev1.EndpointPort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP, AppProtocol: &app}},
		}},
	}
	want := slicer.Endpoints{
		Namespace: "ns", Name: "ext", UID: "u", Labels: map[string]string{"a": "b"},
		Subsets: []slicer.EndpointsSubset{{
			Addresses:         []slicer.EndpointsAddress{{IP: "10.0.0.1", Hostname: "h", NodeName: "n1", TargetRef: slicer.ObjectRef{Kind: "Pod", Name: "p", UID: "pu"}}},
			NotReadyAddresses: []slicer.EndpointsAddress{{IP: "10.0.0.2"}},
			Ports:             []slicer.Port{{Name: "web", Port: 80, Protocol: "TCP", AppProtocol: "http"}},
		}},
	}
	if diff := cmp.Diff(want, EndpointsFromAPI(ep)); diff != "" {
		t.Errorf("EndpointsFromAPI (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(slicer.Endpoints{}, EndpointsFromAPI(nil)); diff != "" {
		t.Errorf("EndpointsFromAPI(nil) (-want +got):\n%s", diff)
	}
}

func newMirrorFixture(t *testing.T, objs ...runtime.Object) (*MirroringController, *fake.Clientset, informers.SharedInformerFactory, *record.FakeRecorder) {
	t.Helper()
	client := fake.NewClientset(objs...)
	endpointslicetest.ActAsAPIServer(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(10)
	c, err := NewMirroringControllerWithOptions(context.Background(), factory.Core().V1().Endpoints(), factory.Discovery().V1().EndpointSlices(),
		factory.Core().V1().Services(), client, MirroringOptions{MaxEndpointsPerSubset: 2, EventRecorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Endpoints:
			err = factory.Core().V1().Endpoints().Informer().GetStore().Add(o)
		case *corev1.Service:
			err = factory.Core().V1().Services().Informer().GetStore().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return c, client, factory, rec
}

// A custom Endpoints object of a selectorless Service is mirrored, with
// upstream's events for skipped addresses; a Service that gains a
// selector loses its mirrored slices.
func TestMirroringControllerSync(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext", UID: "svc-uid"}}
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext", UID: "ep-uid"},
		Subsets: []corev1.EndpointSubset{{
			// Upstream stops at the max: an invalid address after it (in sorted
			// order) is never seen.
			Addresses:         []corev1.EndpointAddress{{IP: "0.bad"}, {IP: "10.0.0.1"}, {IP: "10.0.0.2"}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.3"}},
			Ports:             []corev1.EndpointPort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP}},
		}},
	}
	skipped := ep.DeepCopy()
	skipped.Name = "skipped"
	skipped.Labels = map[string]string{discovery.LabelSkipMirror: "true"}
	skippedSvc := svc.DeepCopy()
	skippedSvc.Name = "skipped"
	c, client, factory, rec := newMirrorFixture(t, svc, ep, skipped, skippedSvc)
	ctx := context.Background()
	for _, key := range []string{"ns/ext", "ns/skipped"} {
		if err := c.syncEndpoints(ctx, key); err != nil {
			t.Fatalf("syncEndpoints(%s) = %v, want nil", key, err)
		}
	}
	list, err := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("slices = %d, want 1 (none for the skip-mirror Endpoints)", len(list.Items))
	}
	s := list.Items[0]
	if got, want := endpointSet(list.Items), map[string]bool{"10.0.0.1": true, "10.0.0.2": true}; !cmp.Equal(got, want) {
		t.Errorf("mirrored endpoints = %v, want %v (max 2 per subset)", got, want)
	}
	if s.Labels[discovery.LabelManagedBy] != MirroringControllerName || s.Labels[discovery.LabelServiceName] != "ext" {
		t.Errorf("labels = %v, want managed by %s for ext", s.Labels, MirroringControllerName)
	}
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	wantEvents := []string{
		"Warning InvalidIPAddress Skipped 1 invalid IP addresses when mirroring to EndpointSlices",
		"Warning TooManyAddressesToMirror A max of 2 addresses can be mirrored to EndpointSlices per Endpoints subset. 2 addresses were skipped",
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Before the informer shows the create, a sync is stale.
	if err := c.syncEndpoints(ctx, "ns/ext"); err == nil || !strings.Contains(err.Error(), "out of date") {
		t.Errorf("syncEndpoints before the informer saw the create = %v, want ErrStaleInformer", err)
	}
	if err := factory.Discovery().V1().EndpointSlices().Informer().GetStore().Add(&s); err != nil {
		t.Fatal(err)
	}
	withSel := svc.DeepCopy()
	withSel.Spec.Selector = map[string]string{"app": "x"}
	if err := factory.Core().V1().Services().Informer().GetStore().Update(withSel); err != nil {
		t.Fatal(err)
	}
	if err := c.syncEndpoints(ctx, "ns/ext"); err != nil {
		t.Fatalf("syncEndpoints after the Service got a selector = %v, want nil", err)
	}
	list, err = client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("slices after the Service got a selector = %d, %v, want 0, nil", len(list.Items), err)
	}
}

func TestMirroringOptionsRefused(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	for _, max := range []int32{-1, 1001} {
		_, err := NewMirroringControllerWithOptions(context.Background(), factory.Core().V1().Endpoints(),
			factory.Discovery().V1().EndpointSlices(), factory.Core().V1().Services(), client,
			MirroringOptions{MaxEndpointsPerSubset: max})
		want := fmt.Sprintf("MaxEndpointsPerSubset %d: must be 1..1000", max)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("MaxEndpointsPerSubset %d: error %v, want one containing %q", max, err, want)
		}
	}
}

// NewMirroringController panics for a maxEndpointsPerSubset outside
// 1..1000, 0 included (only the options take 0 as the default), naming
// the value.
func TestNewMirroringControllerPanicsOnBadMax(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	newWith := func(max int32) (msg string) {
		defer func() {
			if r := recover(); r != nil {
				msg = fmt.Sprint(r)
			}
		}()
		NewMirroringController(context.Background(), f.Core().V1().Endpoints(), f.Discovery().V1().EndpointSlices(),
			f.Core().V1().Services(), max, fake.NewClientset(), 0)
		return ""
	}
	for _, tc := range []struct {
		max  int32
		want string
	}{
		{0, "maxEndpointsPerSubset 0: must be 1..1000"},
		{-5, "MaxEndpointsPerSubset -5: must be 1..1000"},
		{1001, "MaxEndpointsPerSubset 1001: must be 1..1000"},
	} {
		if got := newWith(tc.max); !strings.Contains(got, tc.want) {
			t.Errorf("NewMirroringController(max %d) panicked with %q, want a panic containing %q", tc.max, got, tc.want)
		}
	}
	if got := newWith(1000); got != "" {
		t.Errorf("NewMirroringController(max 1000) panicked: %s", got)
	}
}
