package endpointslice_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
)

// The controller in place of kube-controller-manager's: the same
// informers and arguments as upstream's NewController, plus options for
// the extras. Here on a fake clientset; with a real one it is the same.
func ExampleNewControllerWithOptions() {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", UID: "web-uid"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web-0", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	client := fake.NewClientset(svc, pod, node)
	endpointslicetest.ActAsAPIServer(client) // names, UIDs and generations, as the API server sets them
	factory := informers.NewSharedInformerFactory(client, 0)
	reg := prometheus.NewRegistry()

	ctx, cancel := context.WithCancel(context.Background())
	c, err := endpointslice.NewControllerWithOptions(ctx, factory.Core().V1().Pods(), factory.Core().V1().Services(),
		factory.Core().V1().Nodes(), factory.Discovery().V1().EndpointSlices(), client,
		endpointslice.ControllerOptions{Registerer: reg, EventRecorder: record.NewFakeRecorder(10)})
	if err != nil {
		panic(err)
	}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx, 2) })

	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		list, _ := client.DiscoveryV1().EndpointSlices("demo").List(ctx, metav1.ListOptions{})
		if len(list.Items) == 1 {
			s := list.Items[0]
			fmt.Println(s.Labels["kubernetes.io/service-name"], s.Labels["endpointslice.kubernetes.io/managed-by"], s.Endpoints[0].Addresses)
			break
		}
	}
	cancel() // Run returns once its workers have finished
	wg.Wait()
	factory.Shutdown()

	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() == "endpoint_slice_controller_changes" {
			for _, m := range f.Metric {
				fmt.Println(f.GetName(), m.Label[0].GetValue(), m.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// web endpointslice-controller.k8s.io [10.0.0.1]
	// endpoint_slice_controller_changes create 1
}
