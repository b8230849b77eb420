package main

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
)

const testName = "multicluster.test"

func serviceImport(clusters ...string) *unstructured.Unstructured {
	var list []any
	for _, c := range clusters {
		list = append(list, map[string]any{"cluster": c})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
		"metadata": map[string]any{"namespace": "shop", "name": "web", "uid": "import-uid"},
		"spec":     map[string]any{"type": "ClusterSetIP", "ports": []any{map[string]any{"port": int64(80), "protocol": "TCP"}}},
		"status":   map[string]any{"clusters": list},
	}}
	return u
}

// memberSlice is a slice of shop/web in a member cluster, managed by
// managedBy, with one endpoint per address (ready as given).
func memberSlice(name, managedBy, zone string, ready map[string]bool) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
			Labels: map[string]string{discovery.LabelServiceName: "web", discovery.LabelManagedBy: managedBy}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr("http"), Port: ptr[int32](8080), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, a := range sortedKeys(ready) {
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{a}, Zone: ptr(zone), NodeName: ptr("member-node"),
			Conditions: discovery.EndpointConditions{Ready: ptr(ready[a])}})
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// TestImportedEndpointsBecomeSlicesOwnedByTheServiceImport runs the
// controller on fake clusters: the endpoints of the members a
// ServiceImport lists become the local Service's slices, owned by the
// ServiceImport, without an address twice, without the member's own
// imported slices, and following changes of the members and of the
// ServiceImport until it is deleted.
func TestImportedEndpointsBecomeSlicesOwnedByTheServiceImport(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "svc-uid"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.30", Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	local := fake.NewClientset(svc)
	endpointslicetest.ActAsAPIServer(local)
	east := fake.NewClientset(memberSlice("web-e1", "endpointslice-controller.k8s.io", "zone-a",
		map[string]bool{"10.1.0.1": true, "10.1.0.2": false}))
	west := fake.NewClientset(
		memberSlice("web-w1", "endpointslice-controller.k8s.io", "zone-b", map[string]bool{"10.2.0.1": true, "10.1.0.1": true}),
		memberSlice("web-w2", testName, "zone-b", map[string]bool{"10.9.9.9": true})) // west imports too: not an endpoint of west's
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{ServiceImports: "ServiceImportList"}, serviceImport("east", "west"))

	factory := informers.NewSharedInformerFactory(local, 0)
	dynFactory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	members := map[string]informers.SharedInformerFactory{
		"east": informers.NewSharedInformerFactory(east, 0), "west": informers.NewSharedInformerFactory(west, 0)}
	c, err := newController(local, factory, dynFactory, members, endpointslice.WriterControllerOptions{
		Writer: endpointslice.WriterOptions{ControllerName: testName}, Workers: 2, SingleReplica: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan struct{})
	factory.Start(ctx.Done())
	dynFactory.Start(ctx.Done())
	for _, f := range members {
		f.Start(ctx.Done())
	}
	go func() { defer close(done); c.Run(ctx) }()
	defer func() {
		cancel()
		<-done
		factory.Shutdown()
		dynFactory.Shutdown()
		for _, f := range members {
			f.Shutdown()
		}
	}()

	wantOwner := []metav1.OwnerReference{{APIVersion: "multicluster.x-k8s.io/v1alpha1", Kind: "ServiceImport", Name: "web", UID: "import-uid", Controller: ptr(true)}}
	// until waits for the local slices of web to hold want (address:
	// ready), each address once, every slice owned by the ServiceImport.
	until := func(step string, want map[string]bool) {
		t.Helper()
		var got map[string]bool
		for ctx.Err() == nil {
			list, err := local.DiscoveryV1().EndpointSlices("shop").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got = map[string]bool{}
			for _, s := range list.Items {
				if diff := cmp.Diff(wantOwner, s.OwnerReferences); diff != "" {
					t.Fatalf("%s: slice %s owners (-want +got):\n%s", step, s.Name, diff)
				}
				if s.Labels[discovery.LabelManagedBy] != testName {
					t.Fatalf("%s: slice %s managed by %q", step, s.Name, s.Labels[discovery.LabelManagedBy])
				}
				for _, e := range s.Endpoints {
					if _, dup := got[e.Addresses[0]]; dup {
						t.Fatalf("%s: address %s twice", step, e.Addresses[0])
					}
					if e.NodeName != nil {
						t.Fatalf("%s: endpoint %s carries the member's node name %q", step, e.Addresses[0], *e.NodeName)
					}
					got[e.Addresses[0]] = *e.Conditions.Ready
				}
			}
			if maps.Equal(got, want) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("%s: endpoints %v, want %v", step, got, want)
	}

	until("imported from east and west", map[string]bool{"10.1.0.1": true, "10.1.0.2": false, "10.2.0.1": true})

	if _, err := dyn.Resource(ServiceImports).Namespace("shop").Update(ctx, serviceImport("east"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	until("west no longer exports", map[string]bool{"10.1.0.1": true, "10.1.0.2": false})

	if _, err := east.DiscoveryV1().EndpointSlices("shop").Update(ctx, memberSlice("web-e1", "endpointslice-controller.k8s.io", "zone-a",
		map[string]bool{"10.1.0.2": true, "10.1.0.3": true}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	until("east's endpoints changed", map[string]bool{"10.1.0.2": true, "10.1.0.3": true})

	if err := dyn.Resource(ServiceImports).Namespace("shop").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until("ServiceImport deleted", map[string]bool{})
	for ctx.Err() == nil {
		if list, _ := local.DiscoveryV1().EndpointSlices("shop").List(ctx, metav1.ListOptions{}); len(list.Items) == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Error("the slices stayed after the ServiceImport was deleted")
}

func TestExportingClusters(t *testing.T) {
	got, err := exportingClusters(serviceImport("east", "west"))
	if err != nil || !cmp.Equal(got, []string{"east", "west"}) {
		t.Errorf("exportingClusters = %v, %v; want [east west]", got, err)
	}
	bad := serviceImport("east")
	bad.Object["status"] = map[string]any{"clusters": []any{map[string]any{"cluster": "east"}, map[string]any{}}}
	if _, err := exportingClusters(bad); err == nil || !strings.Contains(err.Error(), "status.clusters[1]") {
		t.Errorf("exportingClusters(no name at 1) = %v, want an error naming status.clusters[1]", err)
	}
}

func TestMemberFlags(t *testing.T) {
	m := memberFlags{}
	for _, v := range []string{"east=/e", "west=/w"} {
		if err := m.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if !maps.Equal(m, memberFlags{"east": "/e", "west": "/w"}) {
		t.Errorf("members = %v", m)
	}
	for _, bad := range []string{"east=/again", "nopath", "=/x", "x="} {
		if err := m.Set(bad); err == nil {
			t.Errorf("Set(%q) = nil, want an error", bad)
		}
	}
}
