package endpointslice_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
	"github.com/fairslice/fairslice/slicer"
)

// Two virtual machines behind a selectorless Service: the caller lists
// them, GroupsFrom makes the slicer's groups, and the Writer writes the
// Service's EndpointSlice under its own managed-by name. A Sync that
// finds the informer behind the Writer's own writes writes nothing and
// returns ErrStaleInformer; it is retried (a rate-limited work queue
// does this with backoff).
func ExampleWriter() {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "vms", UID: "vms-uid"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.20", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	client := fake.NewClientset(svc)
	endpointslicetest.ActAsAPIServer(client) // names, UIDs and generations, as the API server sets them
	factory := informers.NewSharedInformerFactory(client, 0)
	slices := factory.Discovery().V1().EndpointSlices()
	w, err := endpointslice.NewWriter(client, slices, endpointslice.WriterOptions{ControllerName: "vms.example.com"})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer func() { cancel(); factory.Shutdown() }()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	sync := func(vms ...endpointslice.ExternalEndpoint) {
		groups, err := endpointslice.GroupsFrom(svc, vms)
		if err != nil {
			panic(err)
		}
		for {
			err := w.Sync(ctx, svc, groups)
			if !errors.Is(err, endpointslice.ErrStaleInformer) {
				if err != nil {
					panic(err)
				}
				return
			}
			time.Sleep(10 * time.Millisecond) // backoff
		}
	}
	show := func(generation int64) {
		for ctx.Err() == nil { // until the informer shows the last write
			if list, _ := slices.Lister().List(labels.Everything()); len(list) == 1 && list[0].Generation == generation {
				for i, e := range list[0].Endpoints {
					if i > 0 {
						fmt.Print(" ")
					}
					fmt.Print(e.Addresses[0], " ready=", *e.Conditions.Ready)
				}
				fmt.Println()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}

	http := []slicer.Port{{Name: "http", Port: 8080}}
	sync(endpointslice.ExternalEndpoint{Addresses: []string{"192.168.1.10"}, Ports: http, Serving: true},
		endpointslice.ExternalEndpoint{Addresses: []string{"192.168.1.11"}, Ports: http})
	show(1)
	sync(endpointslice.ExternalEndpoint{Addresses: []string{"192.168.1.10"}, Ports: http, Serving: true},
		endpointslice.ExternalEndpoint{Addresses: []string{"192.168.1.11"}, Ports: http, Serving: true})
	show(2)
	// Output:
	// 192.168.1.10 ready=true 192.168.1.11 ready=false
	// 192.168.1.10 ready=true 192.168.1.11 ready=true
}

// GroupsFrom groups a source's endpoints by address type and port set,
// in the order they first appear, and derives readiness as for pods.
func ExampleGroupsFrom() {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "vms"},
		Spec:       corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}},
	}
	http := []slicer.Port{{Name: "http", Port: 8080}}
	groups, err := endpointslice.GroupsFrom(svc, []endpointslice.ExternalEndpoint{
		{Addresses: []string{"192.168.1.10"}, Ports: http, Serving: true, Zone: "zone-a"},
		{Addresses: []string{"2001:db8::0:10"}, Ports: http, Serving: true},
		{Addresses: []string{"192.168.1.11"}, Ports: http, Serving: true, Terminating: true},
	})
	if err != nil {
		panic(err)
	}
	for _, g := range groups {
		fmt.Println(g.AddressType, g.Ports[0].Port, g.Ports[0].Protocol)
		for _, e := range g.Endpoints {
			fmt.Printf("  %s ready=%v zone=%q\n", e.Addresses[0], e.Conditions.Ready, e.Zone)
		}
	}
	_, err = endpointslice.GroupsFrom(svc, []endpointslice.ExternalEndpoint{{Addresses: []string{"vm-1"}}})
	fmt.Println(err)
	// Output:
	// IPv4 8080 TCP
	//   192.168.1.10 ready=true zone="zone-a"
	//   192.168.1.11 ready=false zone=""
	// IPv6 8080 TCP
	//   2001:db8::10 ready=true zone=""
	// endpointslice: endpoints[0] [vm-1]: address "vm-1": neither an IP nor a fully qualified domain name
}

// vmSource is a Source of one selectorless Service and its VMs.
type vmSource struct {
	svc *corev1.Service
	vms []endpointslice.ExternalEndpoint
}

func (s vmSource) Keys() ([]string, error) { return []string{s.svc.Namespace + "/" + s.svc.Name}, nil }

func (s vmSource) Desired(key string) (*corev1.Service, []slicer.Group, error) {
	if key != s.svc.Namespace+"/"+s.svc.Name {
		return nil, nil, nil // not ours (any more): its slices are deleted
	}
	groups, err := endpointslice.GroupsFrom(s.svc, s.vms)
	return s.svc, groups, err
}

// A WriterController runs the loop around a Writer: the caller's Source
// says which Services it has endpoints for and what they are, and an
// informer handler would call Changed when they change. Replicas elect a
// leader on a Lease; this one runs alone (SingleReplica).
func ExampleWriterController() {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "vms", UID: "vms-uid"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.20", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	client := fake.NewClientset(svc)
	endpointslicetest.ActAsAPIServer(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	http := []slicer.Port{{Name: "http", Port: 8080}}
	src := vmSource{svc: svc, vms: []endpointslice.ExternalEndpoint{
		{Addresses: []string{"192.168.1.10"}, Ports: http, Serving: true},
		{Addresses: []string{"192.168.1.11"}, Ports: http},
	}}
	c, err := endpointslice.NewWriterController(client, factory.Discovery().V1().EndpointSlices(), src,
		endpointslice.WriterControllerOptions{Writer: endpointslice.WriterOptions{ControllerName: "vms.example.com"}, SingleReplica: true})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan struct{})
	factory.Start(ctx.Done())
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done; factory.Shutdown() }()

	for ctx.Err() == nil { // until the informer shows the slice
		if list, _ := factory.Discovery().V1().EndpointSlices().Lister().List(labels.Everything()); len(list) == 1 {
			for _, e := range list[0].Endpoints {
				fmt.Println(list[0].Labels["endpointslice.kubernetes.io/managed-by"], e.Addresses[0], "ready", *e.Conditions.Ready)
			}
			return
		}
		time.Sleep(time.Millisecond)
	}
	// Output:
	// vms.example.com 192.168.1.10 ready true
	// vms.example.com 192.168.1.11 ready false
}
