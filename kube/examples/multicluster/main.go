// Command multicluster imports a Service from member clusters, in the
// shape of the Multi-Cluster Services API (mcs-api): for each
// ServiceImport (multicluster.x-k8s.io/v1alpha1) of the cluster it runs
// in, it publishes the endpoints that the member clusters listed in the
// ServiceImport's status.clusters have for the Service of the same
// namespace and name, as the EndpointSlices of the selectorless local
// Service of that name. The slices are written by
// kube/endpointslice.WriterController and owned by the ServiceImport, so
// the garbage collector deletes them with it. Replicas elect a leader on
// the Lease --lease-namespace/--lease-name, and only the leader writes.
//
//	go run ./examples/multicluster --kubeconfig ~/.kube/hub \
//		--member east=~/.kube/east --member west=~/.kube/west
//	kubectl --kubeconfig ~/.kube/hub get endpointslices -l kubernetes.io/service-name=web
//
// It needs, in its own cluster, get, list and watch on Services,
// ServiceImports and EndpointSlices, create, update and delete on
// EndpointSlices, and get, create and update on Leases; in each member, list and watch on EndpointSlices. The
// ServiceImport CRD is mcs-api's (sigs.k8s.io/mcs-api); its controller
// is not needed, only the objects.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// memberFlags collects repeated --member name=kubeconfig flags.
type memberFlags map[string]string

func (m memberFlags) String() string { return fmt.Sprint(map[string]string(m)) }

func (m memberFlags) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want name=kubeconfig, got %q", v)
	}
	if _, dup := m[name]; dup {
		return fmt.Errorf("member %q given twice", name)
	}
	m[name] = path
	return nil
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the importing cluster (empty: in-cluster)")
	name := flag.String("controller-name", "multicluster.fairslice.example", "managed-by label value of the slices written")
	workers := flag.Int("workers", 2, "Services synced at once")
	leaseNS := flag.String("lease-namespace", "default", "namespace of the leader election Lease")
	leaseName := flag.String("lease-name", "multicluster", "name of the leader election Lease (replicas share it)")
	single := flag.Bool("single-replica", false, "run without leader election (only where one replica runs at a time)")
	members := memberFlags{}
	flag.Var(members, "member", "a member cluster as name=kubeconfig (repeatable); name is what ServiceImports list in status.clusters")
	flag.Parse()
	if len(members) == 0 {
		log.Fatal("at least one --member is needed")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	memberFactories := map[string]informers.SharedInformerFactory{}
	for m, path := range members {
		mcfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			log.Fatalf("member %s: %v", m, err)
		}
		mclient, err := kubernetes.NewForConfig(mcfg)
		if err != nil {
			log.Fatalf("member %s: %v", m, err)
		}
		memberFactories[m] = informers.NewSharedInformerFactory(mclient, 0)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	dynFactory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	c, err := newController(client, factory, dynFactory, memberFactories, endpointslice.WriterControllerOptions{
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
	dynFactory.Start(ctx.Done())
	for _, f := range memberFactories {
		f.Start(ctx.Done())
	}
	c.Run(ctx)
	factory.Shutdown()
	dynFactory.Shutdown()
	for _, f := range memberFactories {
		f.Shutdown()
	}
}
