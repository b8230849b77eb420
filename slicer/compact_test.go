package slicer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// traceStats summarizes a churn trace.
type traceStats struct {
	syncs, writes  int
	slices         int     // at the end
	meanFill       float64 // endpoints / (slices × max) at the end
	peakSlices     int
	endpointsAtEnd int
}

// churnTrace drives one Service through three cycles of scale-down (1000
// to 250 pods, 50 random pods per sync), rolling update (25 per sync),
// scale-up (back to 1000, 50 per sync) and rolling update (100 per sync),
// reconciling after every step with opts and applying the plan.
func churnTrace(tb testing.TB, opts Options) traceStats {
	rng := rand.New(rand.NewPCG(42, 7))
	svc := Service{Namespace: "ns", Name: "web", UID: "uid", AddressTypes: []AddressType{IPv4}}
	r, err := NewReconciler(opts)
	if err != nil {
		tb.Fatal(err)
	}
	next := 0
	newPod := func() Endpoint {
		next++
		return Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", next>>16&255, next>>8&255, next&255)}, NodeName: "n",
			Conditions: PodConditions(true, false, false), TargetRef: ObjectRef{Kind: "Pod", Namespace: "ns", Name: fmt.Sprintf("web-%d", next)}}
	}
	var pods []Endpoint
	for range 1000 {
		pods = append(pods, newPod())
	}
	var existing []Slice
	var st traceStats
	created := 0
	sync := func() {
		plan, err := r.Reconcile(svc, []Group{{AddressType: IPv4, Ports: port80, Endpoints: pods}}, existing)
		if err != nil {
			tb.Fatal(err)
		}
		st.syncs++
		st.writes += plan.Writes()
		byName := map[string]Slice{}
		for _, s := range existing {
			byName[s.Name] = s
		}
		for _, s := range plan.Deletes {
			delete(byName, s.Name)
		}
		for _, s := range plan.Updates {
			byName[s.Name] = s
		}
		for _, s := range plan.Creates {
			created++
			s.Name = fmt.Sprintf("web-%05d", created)
			byName[s.Name] = s
		}
		existing = existing[:0]
		for _, s := range byName {
			existing = append(existing, s)
		}
		slices.SortFunc(existing, byName2)
		st.peakSlices = max(st.peakSlices, len(existing))
	}
	remove := func(n int) {
		for range n {
			i := rng.IntN(len(pods))
			pods = slices.Delete(pods, i, i+1)
		}
	}
	sync()
	for range 3 {
		for len(pods) > 250 {
			remove(50)
			sync()
		}
		for range 250 / 25 {
			remove(25)
			for range 25 {
				pods = append(pods, newPod())
			}
			sync()
		}
		for len(pods) < 1000 {
			for range 50 {
				pods = append(pods, newPod())
			}
			sync()
		}
		for range 1000 / 100 {
			remove(100)
			for range 100 {
				pods = append(pods, newPod())
			}
			sync()
		}
	}
	max := opts.MaxEndpointsPerSlice
	if max == 0 {
		max = DefaultMaxEndpointsPerSlice
	}
	st.slices = len(existing)
	for _, s := range existing {
		st.endpointsAtEnd += len(s.Endpoints)
	}
	st.meanFill = float64(st.endpointsAtEnd) / float64(st.slices*max)
	return st
}

func TestCompactionOverChurn(t *testing.T) {
	up := churnTrace(t, Options{})
	c := churnTrace(t, Options{Compact: true})
	t.Logf("upstream policy: %d writes in %d syncs, %d slices (peak %d), mean fill %.2f", up.writes, up.syncs, up.slices, up.peakSlices, up.meanFill)
	t.Logf("compaction:      %d writes in %d syncs, %d slices (peak %d), mean fill %.2f", c.writes, c.syncs, c.slices, c.peakSlices, c.meanFill)
	if c.endpointsAtEnd != up.endpointsAtEnd || c.endpointsAtEnd != 1000 {
		t.Fatalf("endpoints at the end: %d and %d, want 1000", c.endpointsAtEnd, up.endpointsAtEnd)
	}
	if c.writes > up.writes {
		t.Errorf("compaction wrote %d times, upstream policy %d", c.writes, up.writes)
	}
	if c.slices >= up.slices || c.meanFill <= up.meanFill {
		t.Errorf("compaction left %d slices (fill %.2f), upstream policy %d (fill %.2f); want fewer, fuller", c.slices, c.meanFill, up.slices, up.meanFill)
	}
}

// BenchmarkChurnTrace reports, per policy, the writes per sync, the final
// number of slices and their mean fill over the churn trace.
func BenchmarkChurnTrace(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts Options
	}{{"policy=upstream", Options{}}, {"policy=compact", Options{Compact: true}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var st traceStats
			for b.Loop() {
				st = churnTrace(b, tc.opts)
			}
			b.ReportMetric(float64(st.writes)/float64(st.syncs), "writes/sync")
			b.ReportMetric(float64(st.slices), "slices")
			b.ReportMetric(float64(st.peakSlices), "peak-slices")
			b.ReportMetric(st.meanFill, "mean-fill")
		})
	}
}
