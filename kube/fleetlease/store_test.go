package fleetlease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/seats"
)

func newStore(t *testing.T, cs *fake.Clientset, fleetName string) *Store {
	t.Helper()
	s, err := New(Config{Client: cs.CoordinationV1(), Namespace: "kube-system", Fleet: fleetName,
		Now: func() time.Time { return time.Unix(1_800_000_000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func summary(replica string, period uint64, flows ...string) fleet.Summary {
	s := fleet.Summary{Replica: replica, Period: period, ServerConcurrencyLimit: 600,
		Levels: []fleet.LevelDemand{{Name: "global-default", CurrentCL: 49, Limits: seats.LevelLimits{Name: "global-default", NominalCL: 49}}}}
	for i, f := range flows {
		s.Flows = append(s.Flows, fleet.FlowDemand{Level: "global-default", Flow: f, Seats: float64(10 - i), Demand: 20})
	}
	return s
}

// TestStorePublishRead: each replica's summary lands in its own Lease
// (created, then updated), and Read returns the fleet's only, skipping
// a Lease whose annotation does not decode.
func TestStorePublishRead(t *testing.T) {
	cs := fake.NewClientset()
	ctx := context.Background()
	a, other := newStore(t, cs, "api"), newStore(t, cs, "other")
	for _, s := range []fleet.Summary{summary("r0", 1, "global-default/alice"), summary("r1", 1), summary("r0", 2, "global-default/bob")} {
		if err := a.Publish(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Publish(ctx, summary("r9", 1)); err != nil {
		t.Fatal(err)
	}
	bad := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "api-broken", Namespace: "kube-system",
		Labels: map[string]string{LabelFleet: "api"}, Annotations: map[string]string{AnnotationSummary: "{not json"}}}
	if _, err := cs.CoordinationV1().Leases("kube-system").Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := a.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []fleet.Summary{summary("r0", 2, "global-default/bob"), summary("r1", 1)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Read (-want +got):\n%s", d)
	}
	l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "api-r0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity != "r0" || !l.Spec.RenewTime.Equal(&metav1.MicroTime{Time: time.Unix(1_800_000_000, 0)}) {
		t.Errorf("Lease api-r0 spec = %+v, want holder r0 and the store's time", l.Spec)
	}
}

// TestStoreUnderExchange: two replicas' Exchanges see each other through
// Leases; with the API server failing, Round reports it and keeps the
// peer until it is stale.
func TestStoreUnderExchange(t *testing.T) {
	cs := fake.NewClientset()
	ctx := context.Background()
	st := newStore(t, cs, "api")
	var exs []*fleet.Exchange
	for _, name := range []string{"r0", "r1"} {
		ex, err := fleet.NewExchange(fleet.ExchangeConfig{Replica: name, Store: st})
		if err != nil {
			t.Fatal(err)
		}
		exs = append(exs, ex)
	}
	for range 2 {
		for _, ex := range exs {
			if _, err := ex.Round(ctx, summary("ignored", 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	peers, err := exs[0].Round(ctx, summary("", 0))
	if err != nil || len(peers) != 1 || peers[0].Replica != "r1" {
		t.Fatalf("Round = %v, %v; want r1", peers, err)
	}
	down := errors.New("apiserver down")
	cs.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, down })
	var rounds int
	for {
		peers, err = exs[0].Round(ctx, summary("", 0))
		if !errors.Is(err, down) {
			t.Fatalf("Round with the API server down = %v, want %v", err, down)
		}
		if len(peers) == 0 {
			break
		}
		if rounds++; rounds > fleet.DefaultStaleAfter {
			t.Fatalf("peer still kept after %d rounds without the API server", rounds)
		}
	}
}

// TestSummarySizeBound: a summary as large as a server's (the bootstrap
// configuration's levels, MaxTopFlows flows with long names) is under
// MaxSummaryBytes, and its Lease far under the 1.5 MB object limit; one
// with absurd names keeps its heaviest flows that fit.
func TestSummarySizeBound(t *testing.T) {
	c, err := apf.New(nil, apf.Options{ServerConcurrencyLimit: 600, AdjustPeriod: apf.ManualAdjustment})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := fleet.Summary{Replica: "kube-apiserver-" + strings.Repeat("x", 48), Period: 1 << 40, ServerConcurrencyLimit: 600}
	for name, l := range c.Limits() {
		big.Levels = append(big.Levels, fleet.LevelDemand{Name: name, CurrentCL: l.Current,
			Limits: seats.LevelLimits{Name: name, Queuing: true, Shares: 100, NominalCL: l.Nominal, LendableCL: l.Lendable,
				BorrowingCL: l.Borrowing, MinCL: l.Lower, MaxCL: l.Upper, MaxSeats: int(l.MaxSeats), InitialCL: l.Current},
			Demand: seats.SeatDemand{HighWatermark: 1000, Average: 123.456789012345, StdDev: 1.0 / 7, Smoothed: 2.0 / 3}})
	}
	for i := range fleet.MaxTopFlows {
		big.Flows = append(big.Flows, fleet.FlowDemand{Level: "workload-low", Flow: fmt.Sprintf("service-accounts/system:serviceaccount:%s:%d", strings.Repeat("n", 40), i),
			Seats: 1.0 / 3, Demand: 2.0 / 3})
	}
	b, err := Encode(big)
	if err != nil {
		t.Fatal(err)
	}
	back, ok := Decode(string(b))
	if !ok || len(back.Flows) != fleet.MaxTopFlows {
		t.Fatalf("a server-sized summary (%d bytes) lost flows: %d of %d (valid: %v)", len(b), len(back.Flows), fleet.MaxTopFlows, ok)
	}
	if d := cmp.Diff(big, back); d != "" {
		t.Errorf("Decode(Encode(s)) (-s +decoded):\n%s", d)
	}
	t.Logf("a server-sized summary: %d bytes", len(b))
	cs := fake.NewClientset()
	st := newStore(t, cs, "api")
	if err := st.Publish(context.Background(), big); err != nil {
		t.Fatal(err)
	}
	l, _ := cs.CoordinationV1().Leases("kube-system").Get(context.Background(), st.LeaseName(big.Replica), metav1.GetOptions{})
	obj, _ := json.Marshal(l)
	if len(obj) > 2*MaxSummaryBytes {
		t.Errorf("the Lease is %d bytes, want at most %d", len(obj), 2*MaxSummaryBytes)
	}
	absurd := big
	absurd.Flows = nil
	for i := range fleet.MaxTopFlows {
		absurd.Flows = append(absurd.Flows, fleet.FlowDemand{Level: "l", Flow: fmt.Sprint(i, strings.Repeat("y", 1000)), Seats: float64(100 - i)})
	}
	b, err = Encode(absurd)
	if err != nil {
		t.Fatal(err)
	}
	back, _ = Decode(string(b))
	if len(b) > MaxSummaryBytes || len(back.Flows) == 0 || len(back.Flows) == fleet.MaxTopFlows || back.Flows[0].Flow != absurd.Flows[0].Flow {
		t.Errorf("Encode(absurd names) = %d bytes with %d flows; want at most %d bytes, the heaviest kept", len(b), len(back.Flows), MaxSummaryBytes)
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New(Config{Namespace: "Bad_NS", Fleet: "bad fleet"})
	for _, want := range []string{"Client is nil", `Namespace="Bad_NS"`, `Fleet="bad fleet"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(bad) = %v, want it to name %s", err, want)
		}
	}
}
