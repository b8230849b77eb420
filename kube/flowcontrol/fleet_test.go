package flowcontrol

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/kube/fleetlease"
)

// TestRunCoordinatesFleet: two servers with Options.Fleet on one Lease
// store find each other through Run's rounds; each publishes its Lease.
func TestRunCoordinatesFleet(t *testing.T) {
	leases := fake.NewClientset()
	store, err := fleetlease.New(fleetlease.Config{Client: leases.CoordinationV1(), Namespace: "kube-system", Fleet: "api"})
	if err != nil {
		t.Fatal(err)
	}
	var envs []*testEnv
	for _, name := range []string{"a", "b"} {
		envs = append(envs, startEnvWith(t, Options{AdjustPeriod: 10 * time.Millisecond, Fleet: &Fleet{Replica: name, Store: store}}, testObjects()))
	}
	deadline := time.Now().Add(20 * time.Second)
	for envs[0].c.FleetPeers() != 1 || envs[1].c.FleetPeers() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("FleetPeers = %d, %d after 20 s; want 1 each", envs[0].c.FleetPeers(), envs[1].c.FleetPeers())
		}
		time.Sleep(time.Millisecond)
	}
	got, err := store.Read(t.Context())
	if err != nil || len(got) != 2 {
		t.Fatalf("Read = %d summaries, %v; want 2", len(got), err)
	}
}

func TestFleetOptionErrors(t *testing.T) {
	err := (&Controller{}).joinFleet(apf.Options{ServerConcurrencyLimit: 1}, &Fleet{})
	for _, want := range []string{"Options.Fleet", "Replica is empty", "Store is nil"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Options.Fleet without Replica and Store: %v, want it to name %q", err, want)
		}
	}
	var _ fleet.Store = (*fleetlease.Store)(nil)
}
