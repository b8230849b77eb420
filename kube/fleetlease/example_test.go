package fleetlease_test

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/kube/fleetlease"
)

// Two replicas publish their summaries to Leases and read the fleet's.
func ExampleStore() {
	client := fake.NewClientset() // a real server's: kubernetes.NewForConfig(cfg)
	store, err := fleetlease.New(fleetlease.Config{Client: client.CoordinationV1(), Namespace: "kube-system", Fleet: "api"})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, r := range []string{"replica-0", "replica-1"} {
		if err := store.Publish(ctx, fleet.Summary{Replica: r, Period: 1, ServerConcurrencyLimit: 600}); err != nil {
			panic(err)
		}
	}
	all, err := store.Read(ctx)
	if err != nil {
		panic(err)
	}
	for _, s := range all {
		fmt.Println(store.LeaseName(s.Replica), s.Period)
	}
	// Output:
	// api-replica-0 1
	// api-replica-1 1
}
