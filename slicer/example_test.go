package slicer_test

import (
	"fmt"

	"github.com/fairslice/fairslice/slicer"
)

func pod(i int, ready bool) slicer.Endpoint {
	return slicer.Endpoint{
		Addresses:  []string{fmt.Sprintf("10.0.0.%d", i)},
		NodeName:   "node-1",
		Conditions: slicer.PodConditions(ready, false, false),
		TargetRef:  slicer.ObjectRef{Kind: "Pod", Namespace: "demo", Name: fmt.Sprintf("web-%d", i)},
	}
}

// A Service with 250 pods gets three slices; when one pod turns not ready,
// only the slice holding it is rewritten.
func ExampleReconcile() {
	svc := slicer.Service{Namespace: "demo", Name: "web", UID: "web-uid", AddressTypes: []slicer.AddressType{slicer.IPv4}}
	ports := []slicer.Port{{Name: "http", Port: 8080, Protocol: "TCP"}}
	var eps []slicer.Endpoint
	for i := 1; i <= 250; i++ {
		eps = append(eps, pod(i, true))
	}
	plan, err := slicer.Reconcile(svc, []slicer.Group{{AddressType: slicer.IPv4, Ports: ports, Endpoints: eps}}, nil, slicer.Options{})
	if err != nil {
		panic(err)
	}
	var existing []slicer.Slice
	for i, s := range plan.Creates {
		fmt.Printf("create %s… with %d endpoints\n", s.GenerateName, len(s.Endpoints))
		s.Name = fmt.Sprintf("web-%d", i) // the API server names it
		existing = append(existing, s)
	}

	eps[41] = pod(42, false)
	plan, err = slicer.Reconcile(svc, []slicer.Group{{AddressType: slicer.IPv4, Ports: ports, Endpoints: eps}}, existing, slicer.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("then: %d creates, %d updates (%s), %d deletes, %d unchanged\n",
		len(plan.Creates), len(plan.Updates), plan.Updates[0].Name, len(plan.Deletes), len(plan.Unchanged))
	// Output:
	// create web-… with 100 endpoints
	// create web-… with 100 endpoints
	// create web-… with 50 endpoints
	// then: 0 creates, 1 updates (web-1), 0 deletes, 2 unchanged
}

// Compaction merges slices that are rewritten anyway: here two sparse
// slices lose endpoints, and instead of two updates the plan is one update
// and one delete, leaving a single slice.
func ExampleOptions_compact() {
	svc := slicer.Service{Namespace: "demo", Name: "web", UID: "web-uid", AddressTypes: []slicer.AddressType{slicer.IPv4}}
	ports := []slicer.Port{{Name: "http", Port: 8080, Protocol: "TCP"}}
	owner := []slicer.OwnerRef{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "web-uid"}}
	a := slicer.Slice{Name: "web-a", AddressType: slicer.IPv4, Ports: ports, Owners: owner, Endpoints: []slicer.Endpoint{pod(1, true), pod(2, true), pod(3, true)}}
	b := slicer.Slice{Name: "web-b", AddressType: slicer.IPv4, Ports: ports, Owners: owner, Endpoints: []slicer.Endpoint{pod(4, true), pod(5, true), pod(6, true)}}
	desired := []slicer.Group{{AddressType: slicer.IPv4, Ports: ports, Endpoints: []slicer.Endpoint{pod(1, true), pod(2, true), pod(4, true)}}}
	for _, compact := range []bool{false, true} {
		plan, err := slicer.Reconcile(svc, desired, []slicer.Slice{a, b}, slicer.Options{Compact: compact})
		if err != nil {
			panic(err)
		}
		fmt.Printf("compact=%v: %d updates, %d deletes\n", compact, len(plan.Updates), len(plan.Deletes))
	}
	// Output:
	// compact=false: 2 updates, 0 deletes
	// compact=true: 1 updates, 1 deletes
}

// Validate reports every problem with the field path and the value.
func ExampleValidate() {
	err := slicer.Validate(slicer.Slice{
		Name: "web-abcde", AddressType: slicer.IPv4,
		Ports:     []slicer.Port{{Name: "http", Port: 80, Protocol: "ICMP"}},
		Endpoints: []slicer.Endpoint{{Addresses: []string{"127.0.0.1"}}, {Addresses: []string{"1.2.3.256"}}},
	})
	fmt.Println(err)
	// Output:
	// slicer: endpoints[0].addresses[0]: "127.0.0.1" may not be in the loopback range
	// slicer: endpoints[1].addresses[0]: "1.2.3.256" is not a valid IP address
	// slicer: ports[0].protocol: "ICMP" is not one of TCP, UDP, SCTP
}

// Mirror plans the slices for a custom Endpoints object (a Service without
// selector): one slice per address type and port set.
func ExampleMirror() {
	ep := slicer.Endpoints{Namespace: "demo", Name: "db", UID: "db-uid", Subsets: []slicer.EndpointsSubset{{
		Ports:             []slicer.Port{{Name: "pg", Port: 5432, Protocol: "TCP"}},
		Addresses:         []slicer.EndpointsAddress{{IP: "192.0.2.10"}, {IP: "2001:db8::10"}},
		NotReadyAddresses: []slicer.EndpointsAddress{{IP: "192.0.2.11"}, {IP: "not-an-ip"}},
	}}}
	plan, err := slicer.Mirror(ep, nil, slicer.MirrorOptions{})
	if err != nil {
		panic(err)
	}
	for _, s := range plan.Creates {
		fmt.Printf("%s: %d endpoints, managed by %s\n", s.AddressType, len(s.Endpoints), s.Labels[slicer.LabelManagedBy])
	}
	fmt.Printf("skipped %d (invalid %d)\n", plan.Skipped, plan.Invalid)
	// Output:
	// IPv4: 2 endpoints, managed by endpointslicemirroring-controller.k8s.io
	// IPv6: 1 endpoints, managed by endpointslicemirroring-controller.k8s.io
	// skipped 1 (invalid 1)
}
