package main

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
	"github.com/fairslice/fairslice/slicer"
)

// TestConfigMapBecomesEndpointSlices runs the controller on a fake
// clientset: a labelled ConfigMap's addresses become the selectorless
// Service's endpoints, follow the ConfigMap's changes, and go when it is
// deleted; kube-controller-manager's slice of the Service is never
// touched.
func TestConfigMapBecomesEndpointSlices(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vms", UID: "vms-uid"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.20",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}
	kcm := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vms-kcm", UID: "kcm-uid", Generation: 1,
			Labels: map[string]string{discovery.LabelServiceName: "vms", discovery.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discovery.AddressTypeIPv4,
	}
	client := fake.NewClientset(svc, kcm)
	endpointslicetest.ActAsAPIServer(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := newController(client, factory, endpointslice.WriterControllerOptions{
		Writer: endpointslice.WriterOptions{ControllerName: "externalendpoints.test"}, Workers: 2,
		Lease: endpointslice.LeaseOptions{Namespace: "ns", Name: "externalendpoints",
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan struct{})
	factory.Start(ctx.Done())
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done; factory.Shutdown() }()

	// until waits for the Writer's slices of vms to hold want (address:
	// ready) and checks that the kcm slice is as it was.
	until := func(step string, want map[string]bool) {
		t.Helper()
		var got map[string]bool
		for ctx.Err() == nil {
			list, err := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got = map[string]bool{}
			sawKCM := false
			for _, s := range list.Items {
				if s.Name == "vms-kcm" {
					sawKCM = true
					if s.Generation != 1 || len(s.Endpoints) != 0 {
						t.Fatalf("%s: kube-controller-manager's slice was written: %+v", step, s)
					}
					continue
				}
				if got, want := s.Labels[discovery.LabelManagedBy], "externalendpoints.test"; got != want {
					t.Fatalf("%s: slice %s managed by %q, want %q", step, s.Name, got, want)
				}
				if !cmp.Equal(s.Ports, []discovery.EndpointPort{{Name: ptr("http"), Port: ptr[int32](8080), Protocol: ptr(corev1.ProtocolTCP)}}) && len(s.Endpoints) > 0 {
					t.Fatalf("%s: slice %s ports %v, want http 8080/TCP", step, s.Name, s.Ports)
				}
				for _, e := range s.Endpoints {
					got[e.Addresses[0]] = *e.Conditions.Ready
				}
			}
			if !sawKCM {
				t.Fatalf("%s: kube-controller-manager's slice was deleted", step)
			}
			if maps.Equal(got, want) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("%s: endpoints %v, want %v", step, got, want)
	}

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vms", Labels: map[string]string{LabelSource: "true"}},
		Data:       map[string]string{DataKey: "# the database VMs\n192.168.1.10\n192.168.1.11 notready\n"},
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	until("ConfigMap created", map[string]bool{"192.168.1.10": true, "192.168.1.11": false})

	cm.Data[DataKey] = "192.168.1.11\n192.168.1.12\n"
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	until("ConfigMap updated", map[string]bool{"192.168.1.11": true, "192.168.1.12": true})

	if err := client.CoreV1().ConfigMaps("ns").Delete(ctx, "vms", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until("ConfigMap deleted", map[string]bool{})
	for ctx.Err() == nil { // the Writer's slices themselves go, not only their endpoints
		list, _ := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
		if len(list.Items) == 1 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if list, _ := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{}); len(list.Items) != 1 || list.Items[0].Name != "vms-kcm" {
		t.Errorf("slices after the ConfigMap was deleted: %d, want only vms-kcm", len(list.Items))
	}
}

func ptr[T any](v T) *T { return &v }

func TestParseAddresses(t *testing.T) {
	ports := []slicer.Port{{Name: "http", Port: 8080}}
	got, err := parseAddresses("# comment\n10.0.0.1\n\n  10.0.0.2 notready \n", ports)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	var serving []bool
	for _, e := range got {
		addrs = append(addrs, e.Addresses[0])
		serving = append(serving, e.Serving)
	}
	if !slices.Equal(addrs, []string{"10.0.0.1", "10.0.0.2"}) || !slices.Equal(serving, []bool{true, false}) {
		t.Errorf("parseAddresses = %v serving %v, want [10.0.0.1 10.0.0.2] serving [true false]", addrs, serving)
	}
	_, err = parseAddresses("10.0.0.1 ready\n10.0.0.2\n10.0.0.3 a b\n", ports)
	if err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "line 3") || strings.Contains(err.Error(), "line 2") {
		t.Errorf("parseAddresses(bad lines 1 and 3) = %v, want both named and no other", err)
	}
}
