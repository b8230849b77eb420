//lint:file-ignore SA1019 the mirroring controller exists to read the deprecated core/v1 Endpoints API

package endpointslice_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
)

// The mirroring controller in place of kube-controller-manager's: a
// selectorless Service with a hand-written Endpoints object gets an
// EndpointSlice mirroring it, and the metrics land on the caller's
// registry. Here on a fake clientset.
func ExampleNewMirroringControllerWithOptions() {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "db", UID: "db-uid"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.20", Ports: []corev1.ServicePort{{Name: "pg", Port: 5432}}},
	}
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "db", UID: "db-ep-uid"},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "192.0.2.10"}, {IP: "192.0.2.11"}},
			Ports:     []corev1.EndpointPort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}},
		}},
	}
	client := fake.NewClientset(svc, ep)
	endpointslicetest.ActAsAPIServer(client) // names, UIDs and generations, as the API server sets them
	factory := informers.NewSharedInformerFactory(client, 0)
	reg := prometheus.NewRegistry()

	ctx, cancel := context.WithCancel(context.Background())
	c, err := endpointslice.NewMirroringControllerWithOptions(ctx, factory.Core().V1().Endpoints(),
		factory.Discovery().V1().EndpointSlices(), factory.Core().V1().Services(), client,
		endpointslice.MirroringOptions{Registerer: reg, EventRecorder: record.NewFakeRecorder(10)})
	if err != nil {
		panic(err)
	}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx, 1) })

	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		list, _ := client.DiscoveryV1().EndpointSlices("demo").List(ctx, metav1.ListOptions{})
		if len(list.Items) == 1 {
			s := list.Items[0]
			fmt.Println(s.Labels["kubernetes.io/service-name"], s.Labels["endpointslice.kubernetes.io/managed-by"], len(s.Endpoints))
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
		if f.GetName() == "endpoint_slice_mirroring_controller_endpoints_added_per_sync" {
			// The sum, not the count: a sync that finds nothing to do
			// observes 0, and how many such syncs run depends on timing.
			fmt.Println(f.GetName(), "sum", f.Metric[0].GetHistogram().GetSampleSum())
		}
	}
	// Output:
	// db endpointslicemirroring-controller.k8s.io 2
	// endpoint_slice_mirroring_controller_endpoints_added_per_sync sum 2
}
