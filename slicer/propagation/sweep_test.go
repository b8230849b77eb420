package propagation

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairslice/fairslice/slicer"
)

// TestSweepMatchesReconciler replays churns through the real reconciler
// and checks the sweep's model of a sync: only updates, exactly one per
// slice that held a replaced pod, every slice staying full. With one pod
// per sync the sweep's writes and bytes are the reconciler's exactly;
// with several, the reconciler may put a new pod in another rewritten
// slice than its predecessor's, so later syncs touch other slices, and
// the totals agree within a few percent.
func TestSweepMatchesReconciler(t *testing.T) {
	const pods, nodes = 240, 50
	cases := []struct {
		cfg   SweepConfig
		exact bool
	}{
		{SweepConfig{Config: Config{Pods: pods, Nodes: nodes}}, true},
		{SweepConfig{Config: Config{Pods: pods, Nodes: nodes}, Surge: 12, Seed: 1}, false},
		{SweepConfig{Config: Config{Pods: pods, Nodes: nodes}, Pattern: RandomChurn, Rate: 2, Duration: 100 * time.Second, BatchPeriod: 3 * time.Second, Seed: 2}, false},
	}
	for _, tc := range cases {
		sw, err := SweepSizes(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg := sw.Config
		syncs := cfg.syncs()
		for _, per := range []int{1, 7, 100} {
			t.Run(fmt.Sprintf("%v/surge=%d/per=%d", cfg.Pattern, cfg.Surge, per), func(t *testing.T) {
				writes, written := replaySweep(t, cfg.Config, per, syncs)
				row := sw.Rows[per-1]
				if tc.exact {
					if writes != row.Writes || written != row.Written {
						t.Errorf("reconciler: %d writes of %+v; SweepSizes: %d writes of %+v", writes, written, row.Writes, row.Written)
					}
					return
				}
				near := func(a, b int) bool { return float64(a) >= 0.95*float64(b) && float64(a) <= 1.05*float64(b) }
				if !near(writes, row.Writes) || !near(written.Protobuf, row.Written.Protobuf) {
					t.Errorf("reconciler: %d writes of %+v; SweepSizes: %d writes of %+v, want within 5%%", writes, written, row.Writes, row.Written)
				}
			})
		}
	}
}

// replaySweep runs the syncs through slicer.Reconciler with slices of
// per and returns its writes and bytes written.
func replaySweep(t *testing.T, c Config, per int, syncs [][]int) (int, Size) {
	t.Helper()
	svc := service
	svc.AddressTypes = []slicer.AddressType{slicer.IPv4}
	svc.TriggerTime = created
	rec, err := slicer.NewReconciler(slicer.Options{MaxEndpointsPerSlice: per})
	if err != nil {
		t.Fatal(err)
	}
	eps := make([]slicer.Endpoint, c.Pods)
	for i := range eps {
		eps[i] = pod(0, i, c.Nodes)
	}
	var existing []slicer.Slice
	for k := 0; k < c.Pods; k += per {
		s := slice(slices.Clone(eps[k:min(c.Pods, k+per)]))
		s.Name, s.GenerateName = fmt.Sprintf("web-%05d", k/per), slicer.GenerateName(svcName)
		existing = append(existing, s)
	}
	gen := make([]int, c.Pods)
	writes, written := 0, Size{}
	for si, batch := range syncs {
		holders := map[string]bool{}
		for _, i := range batch {
			for _, s := range existing {
				if slices.ContainsFunc(s.Endpoints, func(e slicer.Endpoint) bool { return e.Addresses[0] == eps[i].Addresses[0] }) {
					holders[s.Name] = true
				}
			}
			gen[i] = gen[i]%14 + 1
			eps[i] = pod(gen[i], i, c.Nodes)
		}
		plan, err := rec.Reconcile(svc, []slicer.Group{{AddressType: slicer.IPv4, Ports: ports, Endpoints: eps}}, existing)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Creates) != 0 || len(plan.Deletes) != 0 || len(plan.Updates) != len(holders) {
			t.Fatalf("sync %d: %d creates, %d updates, %d deletes; want %d updates, one per slice that held a replaced pod",
				si, len(plan.Creates), len(plan.Updates), len(plan.Deletes), len(holders))
		}
		for _, u := range plan.Updates {
			if !holders[u.Name] {
				t.Fatalf("sync %d: updates %s, which held no replaced pod", si, u.Name)
			}
			writes++
			written = written.Add(EndpointSliceSize(u, stored))
			for j := range existing {
				if existing[j].Name == u.Name {
					if len(u.Endpoints) != len(existing[j].Endpoints) {
						t.Fatalf("sync %d: %s goes from %d to %d endpoints", si, u.Name, len(existing[j].Endpoints), len(u.Endpoints))
					}
					existing[j] = u
				}
			}
		}
	}
	return writes, written
}

// TestSweepTradeOff checks the trade-off the sweep is for: with single
// pods changing, smaller slices send fewer bytes (slices of 1 send the
// least) but each watcher holds more objects and lists more bytes; when a
// quarter of the pods change per sync, every slice is rewritten anyway
// and the largest slices send the least.
func TestSweepTradeOff(t *testing.T) {
	single, err := SweepSizes(SweepConfig{Config: Config{Pods: 2000, Nodes: 100}, Pattern: RandomChurn, Duration: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if single.MinSent != 1 {
		t.Errorf("single-pod churn: fewest bytes sent at %d per slice, want 1", single.MinSent)
	}
	for i := 1; i < len(sweepSizesShown); i++ {
		a, b := single.Rows[sweepSizesShown[i-1]-1], single.Rows[sweepSizesShown[i]-1]
		if b.Written.Protobuf <= a.Written.Protobuf || b.Slices >= a.Slices || b.ListBytes.Protobuf >= a.ListBytes.Protobuf {
			t.Errorf("single-pod churn, %d to %d per slice: written %d to %d, slices %d to %d, list %d to %d; want written to grow, slices and list to fall",
				a.MaxEndpointsPerSlice, b.MaxEndpointsPerSlice, a.Written.Protobuf, b.Written.Protobuf, a.Slices, b.Slices, a.ListBytes.Protobuf, b.ListBytes.Protobuf)
		}
	}
	if single.Replacements != 600 || single.Syncs != 600 || single.Rows[99].Writes != 600 {
		t.Errorf("single-pod churn: %d replacements in %d syncs, %d writes at 100 per slice; want 600 each",
			single.Replacements, single.Syncs, single.Rows[99].Writes)
	}
	surge, err := SweepSizes(SweepConfig{Config: Config{Pods: 2000, Nodes: 100}, Surge: 500})
	if err != nil {
		t.Fatal(err)
	}
	if surge.MinSent < 200 {
		t.Errorf("rolling update 500 per sync: fewest bytes sent at %d per slice, want 200 or more", surge.MinSent)
	}
	if w := surge.Rows[999].Writes; w != 4*2 {
		t.Errorf("rolling update 500 per sync, 1000 per slice: %d writes, want 8 (both slices in each of 4 syncs)", w)
	}
}

func TestSweepRejectsBadConfig(t *testing.T) {
	_, err := SweepSizes(SweepConfig{Config: Config{Pods: 10, Nodes: 1}, Surge: 11, Rate: -1, Duration: -time.Second, BatchPeriod: -time.Second, Pattern: 7})
	for _, want := range []string{"Surge: 11", "Rate: -1", "Duration: -1s", "BatchPeriod: -1s", "Pattern: 7"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SweepSizes(bad) error = %v, want it to name %q", err, want)
		}
	}
}

func TestSweepTable(t *testing.T) {
	sw, err := SweepSizes(SweepConfig{Config: Config{Pods: 300, Nodes: 10}, Pattern: RandomChurn, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := sw.WriteTable(&b, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Random churn of 300 pods at 1/s for 1m0s (60 replacements in 60 syncs", "fewest bytes sent", "default"} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteTable output lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines != 3+10 {
		t.Errorf("WriteTable wrote %d lines, want a title, a blank line, a header and 10 rows:\n%s", lines, out)
	}
	if err := sw.WriteTable(&b, []int{1001}); err == nil {
		t.Errorf("WriteTable(size 1001) = nil error, want out of range")
	}
}
