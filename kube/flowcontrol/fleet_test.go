package flowcontrol

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/informers"
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

// TestFleetRoundPeriod: a fleet with a GoAway runs its rounds every
// second by default (steering needs fresh summaries), not every
// adjustment period of upstream's 10 s; Fleet.Period, then
// Options.AdjustPeriod, override that default.
func TestFleetRoundPeriod(t *testing.T) {
	g, err := apf.NewTargetedGoAway(0)
	if err != nil {
		t.Fatal(err)
	}
	store := fleet.NewMemoryStore()
	withFleet := func(adjust, period time.Duration, goAway *apf.TargetedGoAway) Options {
		return Options{AdjustPeriod: adjust, Fleet: &Fleet{Replica: "a", Store: store, Period: period, GoAway: goAway}}
	}
	cases := map[string]Options{
		"alone":                              {},
		"alone, AdjustPeriod 3s":             {AdjustPeriod: 3 * time.Second},
		"fleet":                              withFleet(0, 0, nil),
		"fleet, AdjustPeriod 3s":             withFleet(3*time.Second, 0, nil),
		"fleet, Period 500ms":                withFleet(0, 500*time.Millisecond, nil),
		"fleet with GoAway":                  withFleet(0, 0, g),
		"fleet with GoAway, AdjustPeriod 3s": withFleet(3*time.Second, 0, g),
		"fleet with GoAway, Period 2s":       withFleet(3*time.Second, 2*time.Second, g),
	}
	want := map[string]time.Duration{
		"alone":                              10 * time.Second,
		"alone, AdjustPeriod 3s":             3 * time.Second,
		"fleet":                              10 * time.Second,
		"fleet, AdjustPeriod 3s":             3 * time.Second,
		"fleet, Period 500ms":                500 * time.Millisecond,
		"fleet with GoAway":                  time.Second,
		"fleet with GoAway, AdjustPeriod 3s": 3 * time.Second,
		"fleet with GoAway, Period 2s":       2 * time.Second,
	}
	got := map[string]time.Duration{}
	for name, opts := range cases {
		client := fake.NewClientset()
		c, err := NewWithOptions(informers.NewSharedInformerFactory(client, 0), client.FlowcontrolV1(), 10, opts)
		if err != nil {
			t.Fatalf("%s: NewWithOptions = %v", name, err)
		}
		got[name] = c.period
		c.queue.ShutDown() // Run would, at its end
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Run's period (-want +got):\n%s", diff)
	}
	client := fake.NewClientset()
	_, err = NewWithOptions(informers.NewSharedInformerFactory(client, 0), client.FlowcontrolV1(), 10, withFleet(0, -time.Second, g))
	if err == nil || !strings.Contains(err.Error(), "Options.Fleet.Period=-1s") {
		t.Errorf("NewWithOptions with Fleet.Period -1s = %v, want an error naming Options.Fleet.Period=-1s", err)
	}
}
