// Command externalendpoints publishes virtual machines (or any hosts
// outside the cluster) as the endpoints of selectorless Services: a
// ConfigMap labelled externalendpoints.fairslice.example/source=true
// lists the addresses of the Service of the same name, one per line
// (optionally followed by "notready"), and the command keeps the
// Service's EndpointSlices in line with it through
// kube/endpointslice.WriterController, as the ConfigMap changes.
//
//	kubectl create service clusterip vms --tcp=80:8080 --dry-run=client -o yaml |
//		yq 'del(.spec.selector)' | kubectl apply -f -
//	kubectl create configmap vms --from-literal=addresses=$'192.168.1.10\n192.168.1.11 notready'
//	kubectl label configmap vms externalendpoints.fairslice.example/source=true
//	go run ./examples/externalendpoints --kubeconfig ~/.kube/config
//	kubectl get endpointslices -l kubernetes.io/service-name=vms
//
// Its slices carry the managed-by label of --controller-name, so
// kube-controller-manager's controllers leave them alone and it leaves
// theirs. Replicas elect a leader on the Lease --lease-namespace/--lease-name,
// and only the leader writes. It needs get, list and watch on Services,
// ConfigMaps and EndpointSlices, create, update and delete on
// EndpointSlices, and get, create and update on Leases.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (empty: in-cluster)")
	name := flag.String("controller-name", "externalendpoints.fairslice.example", "managed-by label value of the slices written")
	workers := flag.Int("workers", 2, "Services synced at once")
	leaseNS := flag.String("lease-namespace", "default", "namespace of the leader election Lease")
	leaseName := flag.String("lease-name", "externalendpoints", "name of the leader election Lease (replicas share it)")
	single := flag.Bool("single-replica", false, "run without leader election (only where one replica runs at a time)")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := newController(client, factory, endpointslice.WriterControllerOptions{
		Writer:        endpointslice.WriterOptions{ControllerName: *name},
		Workers:       *workers,
		Lease:         endpointslice.LeaseOptions{Namespace: *leaseNS, Name: *leaseName},
		SingleReplica: *single,
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	factory.Start(ctx.Done())
	c.Run(ctx)
	factory.Shutdown()
}
