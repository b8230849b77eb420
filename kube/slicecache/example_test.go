package slicecache_test

import (
	"context"
	"fmt"
	"time"

	kslicecache "github.com/fairslice/fairslice/kube/slicecache"
	"github.com/fairslice/fairslice/slicecache"
	"github.com/fairslice/fairslice/topology"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// A controller that programmed a load balancer from core/v1 Endpoints
// switches to EndpointSlices. It used to do this:
//
//	factory.Core().V1().Endpoints().Informer().AddEventHandler(handler)
//	// on every event: read all of eps.Subsets, rebuild the Service's
//	// backends, diff them against the previous ones
//
// With the Consumer it registers on the EndpointSlice informer instead,
// and on each signal checks out what changed: per Service and port, the
// endpoints added, updated and removed, already merged across the
// Service's slices (here an endpoint moving from one slice to another is
// in both, terminating in the old one).
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	client := fake.NewClientset(
		slice("web-abc12", "10.0.0.1", false, "10.0.0.2", true),
		slice("web-def34", "10.0.0.2", false, "10.0.0.3", false),
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	defer factory.Shutdown()
	defer cancel() // stops the informers before Shutdown waits for them

	consumer, _ := kslicecache.NewConsumer(kslicecache.Options{NodeName: "node-a"})
	// Before: factory.Core().V1().Endpoints().Informer().AddEventHandler(...)
	_, _ = factory.Discovery().V1().EndpointSlices().Informer().AddEventHandler(consumer)
	factory.Start(ctx.Done())

	web := slicecache.ServiceName{Namespace: "default", Name: "web"}
	http := slicecache.PortName{Name: "http", Protocol: "TCP"}
	for len(consumer.Endpoints(web, http)) < 3 && ctx.Err() == nil {
		waitChanges(ctx, consumer) // the program would reprogram each changed Service here
	}
	for _, e := range consumer.Endpoints(web, http) {
		fmt.Printf("%s:%d ready=%v terminating=%v\n", e.Address, e.Port, e.Ready, e.Terminating)
	}

	// The move completes: the old slice drops the endpoint. The Service is
	// reported, but none of its endpoints changed.
	_, _ = client.DiscoveryV1().EndpointSlices("default").Update(ctx, slice("web-abc12", "10.0.0.1", false), metav1.UpdateOptions{})
	var changes []slicecache.Change
	for len(changes) == 0 && ctx.Err() == nil { // a signal may be left from the first changes
		changes = waitChanges(ctx, consumer)
	}
	for _, ch := range changes {
		fmt.Printf("%s: %d ports changed\n", ch.Service, len(ch.Ports))
	}

	// What this node's proxy would use for cluster traffic.
	sel := consumer.ForNode(web, http, topology.TrafficPolicy{}, "zone-a")
	for _, e := range sel.Cluster() {
		fmt.Println("cluster:", e.Address)
	}
	// Output:
	// 10.0.0.1:8080 ready=true terminating=false
	// 10.0.0.2:8080 ready=true terminating=false
	// 10.0.0.3:8080 ready=true terminating=false
	// default/web: 0 ports changed
	// cluster: 10.0.0.1
	// cluster: 10.0.0.2
	// cluster: 10.0.0.3
}

// waitChanges waits for the Consumer's signal (or the end of ctx) and
// checks out the changes.
func waitChanges(ctx context.Context, c *kslicecache.Consumer) []slicecache.Change {
	select {
	case <-c.Changed():
		return c.Checkout()
	case <-ctx.Done():
		return nil
	}
}

// slice is an EndpointSlice of Service default/web with pairs of
// (address, terminating).
func slice(name string, eps ...any) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{discovery.LabelServiceName: "web"}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for i := 0; i < len(eps); i += 2 {
		term := eps[i+1].(bool)
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{
			Addresses:  []string{eps[i].(string)},
			Conditions: discovery.EndpointConditions{Ready: ptr.To(!term), Serving: ptr.To(true), Terminating: ptr.To(term)},
			NodeName:   ptr.To("node-a"),
		})
	}
	return s
}
