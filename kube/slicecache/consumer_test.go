package slicecache

import (
	"testing"
	"time"

	"github.com/fairslice/fairslice/slicecache"
	"github.com/fairslice/fairslice/slicer"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func apiSlice(name, rv string, at discovery.AddressType) *discovery.EndpointSlice {
	return &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv,
			Labels: map[string]string{discovery.LabelServiceName: "web"}},
		AddressType: at,
		Ports: []discovery.EndpointPort{
			{Name: ptr.To("http"), Port: ptr.To[int32](80)},                 // protocol defaults to TCP
			{Port: ptr.To[int32](81), Protocol: ptr.To(corev1.ProtocolTCP)}, // no name: dropped
		},
		Endpoints: []discovery.Endpoint{{
			Addresses: []string{"10.0.0.1"}, Hostname: ptr.To("h"), NodeName: ptr.To("node-a"), Zone: ptr.To("zone-a"),
			Conditions: discovery.EndpointConditions{Ready: ptr.To(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"},
			Hints:      &discovery.EndpointHints{ForZones: []discovery.ForZone{{Name: "zone-a"}}, ForNodes: []discovery.ForNode{{Name: "node-a"}}},
		}},
	}
}

func TestFromAPI(t *testing.T) {
	got := FromAPI(apiSlice("web-1", "7", discovery.AddressTypeIPv4))
	want := &slicecache.Slice{ResourceVersion: "7", Slice: slicer.Slice{
		Name: "web-1", Namespace: "ns", AddressType: slicer.IPv4,
		Ports:  []slicer.Port{{Name: "http", Port: 80, Protocol: "TCP"}},
		Labels: map[string]string{discovery.LabelServiceName: "web"},
		Endpoints: []slicer.Endpoint{{
			Addresses: []string{"10.0.0.1"}, Hostname: "h", NodeName: "node-a", Zone: "zone-a",
			Conditions: slicer.Conditions{Ready: slicer.False},
			TargetRef:  slicer.ObjectRef{Kind: "Pod", Namespace: "ns", Name: "p"},
			Hints:      &slicer.Hints{ForZones: []string{"zone-a"}, ForNodes: []string{"node-a"}},
		}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FromAPI (-want +got):\n%s", diff)
	}
}

// TestConsumerHandler drives the ResourceEventHandler methods as an
// informer does, tombstone included.
func TestConsumerHandler(t *testing.T) {
	c, err := NewConsumer(Options{NodeName: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewConsumer(Options{AddressType: "IP"}); err == nil {
		t.Errorf("NewConsumer(AddressType IP) = nil error, want one")
	}
	web := slicecache.ServiceName{Namespace: "ns", Name: "web"}
	http := slicecache.PortName{Name: "http", Protocol: "TCP"}

	c.OnAdd(apiSlice("web-6", "1", discovery.AddressTypeIPv6), true) // another family: ignored
	select {
	case <-c.Changed():
		t.Fatalf("Changed() fired for an IPv6 slice in an IPv4 consumer")
	default:
	}
	c.OnAdd(apiSlice("web-1", "1", discovery.AddressTypeIPv4), true)
	select {
	case <-c.Changed():
	case <-time.After(10 * time.Second):
		t.Fatalf("Changed() did not fire after an add")
	}
	changes := c.Checkout()
	if len(changes) != 1 || len(changes[0].Ports) != 1 || len(changes[0].Ports[0].Added) != 1 {
		t.Fatalf("Checkout() after one add = %+v, want one added endpoint", changes)
	}
	eps := c.Endpoints(web, http)
	if len(eps) != 1 || !eps[0].Local || eps[0].Ready || !eps[0].Serving {
		t.Errorf("Endpoints = %+v, want one local endpoint, not ready, serving (unset)", eps)
	}
	if got := c.Ports(web); !cmp.Equal(got, []slicecache.PortName{http}) {
		t.Errorf("Ports = %v, want only http/TCP", got)
	}

	c.OnUpdate(nil, apiSlice("web-1", "1", discovery.AddressTypeIPv4)) // resync
	if got := c.Checkout(); got != nil {
		t.Errorf("Checkout() after a resync = %+v, want nothing", got)
	}
	c.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/web-1", Obj: apiSlice("web-1", "1", discovery.AddressTypeIPv4)})
	changes = c.Checkout()
	if len(changes) != 1 || len(changes[0].Ports) != 1 || len(changes[0].Ports[0].Removed) != 1 {
		t.Fatalf("Checkout() after a tombstone = %+v, want one removed endpoint", changes)
	}
	if eps := c.Endpoints(web, http); eps != nil {
		t.Errorf("Endpoints after the deletion = %+v, want none", eps)
	}
}
