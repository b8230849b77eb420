package endpointslice_test

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/slicer"
)

// A controller's sync: pods and nodes from listers in, discovery/v1
// objects out.
func Example() {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", UID: "web-uid"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")}}},
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}})
	nodes := corelisters.NewNodeLister(idx)
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: fmt.Sprintf("web-%d", i)},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app",
				Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: fmt.Sprintf("10.0.0.%d", i+1)}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}

	var conv endpointslice.Converter
	core, err := slicer.NewReconciler(slicer.Options{})
	if err != nil {
		panic(err)
	}
	desired, err := conv.Desired(svc, pods, nodes)
	var skipped *endpointslice.SkippedPodsError
	if err != nil && !errors.As(err, &skipped) {
		panic(err) // a failure: write nothing
	}
	existing, err := conv.Existing(nil)
	if err != nil {
		panic(err)
	}
	plan, err := core.Reconcile(endpointslice.ServiceFacts(svc, time.Time{}), desired, existing)
	if err != nil {
		panic(err)
	}
	creates, _, _, err := endpointslice.Objects(plan, nil)
	if err != nil {
		panic(err)
	}
	s := creates[0]
	fmt.Println(s.GenerateName, s.AddressType, *s.Ports[0].Name, *s.Ports[0].Port, len(s.Endpoints), *s.Endpoints[0].Zone)
	// Output:
	// web- IPv4 http 8080 3 zone-a
}

// A worker's Syncer: the first sync creates the slice; once it is in the
// informer, the next syncs plan nothing, and the same objects listed again
// are recognised without converting them.
func ExampleSyncer() {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", UID: "web-uid"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}},
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	nodes := corelisters.NewNodeLister(idx)
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: fmt.Sprintf("web-%d", i)},
			Spec:       corev1.PodSpec{NodeName: "node-1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: fmt.Sprintf("10.0.0.%d", i+1)}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	s, err := endpointslice.NewSyncer(slicer.Options{})
	if err != nil {
		panic(err)
	}
	facts := endpointslice.ServiceFacts(svc, time.Time{})

	plan, _, err := s.Plan(facts, svc, pods, nodes, nil)
	if err != nil {
		panic(err)
	}
	creates, _, _, err := endpointslice.Objects(plan, nil)
	if err != nil {
		panic(err)
	}
	creates[0].Name = "web-x7k2p" // as the API server names it
	fmt.Println("first sync: creates", len(plan.Creates))

	for range 2 {
		plan, _, err = s.Plan(facts, svc, pods, nodes, creates)
		if err != nil {
			panic(err)
		}
		fmt.Println("next sync: writes", plan.Writes(), "unchanged", len(plan.Unchanged))
	}
	// Output:
	// first sync: creates 1
	// next sync: writes 0 unchanged 1
	// next sync: writes 0 unchanged 1
}

// brokenNodes is a NodeGetter during an API outage.
type brokenNodes struct{}

func (brokenNodes) Get(string) (*corev1.Node, error) { return nil, errors.New("connection refused") }

// A failed node lookup is a failure, not skipped pods: the caller writes
// nothing. (Reconciling the nil groups would delete every endpoint.)
func ExampleConverter_Desired_failure() {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", UID: "web-uid"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-0"},
		Spec:       corev1.PodSpec{NodeName: "node-1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}},
	}
	var conv endpointslice.Converter
	desired, err := conv.Desired(svc, []*corev1.Pod{pod}, brokenNodes{})
	var skipped *endpointslice.SkippedPodsError
	switch {
	case err != nil && !errors.As(err, &skipped):
		fmt.Println("failure, write nothing:", desired == nil, err)
	case skipped != nil:
		fmt.Println("some pods skipped: write the plan, retry later")
	}
	// Output:
	// failure, write nothing: true endpointslice: pod demo/web-0: looking up node "node-1": connection refused
}
