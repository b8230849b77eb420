package topologycompare

import (
	"time"

	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
	"github.com/go-logr/logr"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/endpointslice/topologycache"
)

// optionCluster is a random cluster with sufficient node information and
// a fresh plan (every endpoint to create) for an Auto Service.
type optionCluster struct {
	c   *addHintsCase
	cap topology.Capacity
}

func optionClusters(n int) []optionCluster {
	rng := rand.New(rand.NewPCG(42, 0x0b7))
	var out []optionCluster
	for len(out) < n {
		c := randomAddHintsCase(rng)
		nodes := adapter.NodesFromAPI(c.Nodes)
		capacity := topology.NewCapacity(nodes)
		if !capacity.Sufficient() {
			continue
		}
		c.ToCreate = append(append(c.ToCreate, c.ToUpdate...), c.Unchanged...)
		c.ToUpdate, c.Unchanged = nil, nil
		for _, s := range c.ToCreate {
			for i := range s.Endpoints {
				s.Endpoints[i].Hints = nil
				// The controller always sets ready; an unset one (which
				// kube-proxy reads as ready, the controller as not) would
				// make kube-proxy ignore every hint.
				if s.Endpoints[i].Conditions.Ready == nil {
					s.Endpoints[i].Conditions.Ready = ptr(false)
				}
			}
		}
		out = append(out, optionCluster{c, capacity})
	}
	return out
}

// optionStats summarises hints over clusters in the model of
// topology.Evaluate.
type optionStats struct {
	kept, clusters             int
	cross, overload, overload2 float64 // sums, and the maximum overload
}

func (s *optionStats) add(c topology.Capacity, slices []*topology.Slice) {
	q := topology.Evaluate(c, slices)
	s.clusters++
	if q.Hinted {
		s.kept++
	}
	s.cross += q.CrossZone
	s.overload += q.MaxOverload
	s.overload2 = max(s.overload2, q.MaxOverload)
}

func (s *optionStats) report(b *testing.B) {
	b.ReportMetric(float64(s.kept)/float64(s.clusters), "kept-hints")
	b.ReportMetric(s.cross/float64(s.clusters), "cross-zone")
	b.ReportMetric(s.overload/float64(s.clusters), "mean-max-overload")
	b.ReportMetric(s.overload2, "max-overload")
}

// BenchmarkOptions runs upstream's AddHints and fairslice's allocators on
// the same 1,000 random clusters (fresh plans of Auto Services) and reports
// the fraction of Services whose hints kube-proxy uses in every zone
// (kept-hints), the mean expected fraction of traffic served in another
// zone (cross-zone; traffic of a zone without usable hints spreads over
// all endpoints), and the mean and largest endpoint overload. One op is
// one pass over the clusters; run with -benchtime 1x.
func BenchmarkOptions(b *testing.B) {
	clusters := optionClusters(1000)
	b.Run("impl=upstream", func(b *testing.B) {
		var st optionStats
		for b.Loop() {
			st = optionStats{}
			for _, oc := range clusters {
				c := oc.c.clone()
				tc := topologycache.NewTopologyCache()
				tc.SetNodes(logr.Discard(), c.Nodes)
				si := &topologycache.SliceInfo{ServiceKey: "ns/svc", AddressType: discovery.AddressTypeIPv4, ToCreate: c.ToCreate}
				create, _, _ := tc.AddHints(logr.Discard(), si)
				st.add(oc.cap, fromAPI(create))
			}
		}
		st.report(b)
	})
	for _, alloc := range []struct {
		name string
		a    topology.Allocator
	}{{"fairslice", topology.AllocatorUpstream}, {"fairslice-mincross", topology.AllocatorMinCrossZone}} {
		b.Run("impl="+alloc.name, func(b *testing.B) {
			var st optionStats
			for b.Loop() {
				st = optionStats{}
				for _, oc := range clusters {
					si := &topology.SliceInfo{AddressType: "IPv4", ToCreate: fromAPI(oc.c.clone().ToCreate)}
					topology.AddHints(oc.cap, si, topology.Options{Allocator: alloc.a})
					st.add(oc.cap, si.ToCreate)
				}
			}
			st.report(b)
		})
	}
}

// churn replays a trace of pods coming and going (one change per step)
// through the slicer and HintPlan, carrying the slices from step to step
// as the API server would, and returns the slice writes, the number of
// times hints were turned on or off, and the mean cross-zone fraction.
func churn(steps int, opts topology.Options) (writes, flips int, cross float64) {
	rng := rand.New(rand.NewPCG(7, 7))
	c, err := topology.CapacityFromZones(map[string]int64{"zone-a": 4000, "zone-b": 4000, "zone-c": 4000})
	if err != nil {
		panic(err)
	}
	zones := []string{"zone-a", "zone-b", "zone-c"}
	svc := slicer.Service{Namespace: "ns", Name: "web", UID: "uid", AddressTypes: []slicer.AddressType{slicer.IPv4}, TopologyHints: true}
	ports := []slicer.Port{{Name: "http", Port: 80, Protocol: "TCP"}}
	var pods []slicer.Endpoint
	next := 0
	addPod := func() {
		next++
		z := zones[rng.IntN(3)]
		pods = append(pods, slicer.Endpoint{
			Addresses: []string{fmt.Sprintf("10.0.%d.%d", next/250, next%250)}, Zone: z, NodeName: z + "-node",
			Conditions: slicer.PodConditions(true, false, false), TargetRef: slicer.ObjectRef{Kind: "Pod", Namespace: "ns", Name: fmt.Sprint("pod-", next)},
		})
	}
	for range 12 {
		addPod()
	}
	var existing []slicer.Slice
	had := opts.HadHints
	named := 0
	r, err := slicer.NewReconciler(slicer.Options{MaxEndpointsPerSlice: 5})
	if err != nil {
		panic(err)
	}
	for step := range steps {
		if step > 0 {
			if (rng.IntN(2) == 0 && len(pods) < 18) || len(pods) <= 8 {
				addPod()
			} else {
				k := rng.IntN(len(pods))
				pods = append(pods[:k], pods[k+1:]...)
			}
		}
		plan, err := r.Reconcile(svc, []slicer.Group{{AddressType: slicer.IPv4, Ports: ports, Endpoints: pods}}, existing)
		if err != nil {
			panic(err)
		}
		o := opts
		o.HadHints = had
		res, now := topology.HintPlan(c, &plan, time.Time{}, topology.PolicyAuto, o)
		_ = res
		if step > 0 {
			writes += plan.Writes()
			if now != had {
				flips++
			}
		}
		had = now
		// Apply the plan.
		byName := map[string]slicer.Slice{}
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
			named++
			s.Name = fmt.Sprintf("web-%05d", named)
			byName[s.Name] = s
		}
		existing = existing[:0]
		var all []*topology.Slice
		for _, s := range byName {
			existing = append(existing, s)
		}
		for i := range existing {
			all = append(all, &existing[i])
		}
		cross += topology.Evaluate(c, all).CrossZone
	}
	return writes, flips, cross / float64(steps)
}

// BenchmarkChurn reports slice writes, hint on/off flips and the mean
// cross-zone fraction over a 400-step churn trace (an Auto Service with
// 8 to 18 pods over three equal zones, one pod added or removed per step,
// slices of at most 5 endpoints) for upstream's allocator (fairslice's
// exact emulation, which the differential tests check against upstream),
// the min-cross-zone allocator, and min-cross-zone with 0.1 hysteresis.
func BenchmarkChurn(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts topology.Options
	}{
		{"upstream", topology.Options{}},
		{"fairslice-mincross", topology.Options{Allocator: topology.AllocatorMinCrossZone}},
		{"fairslice-mincross-hysteresis", topology.Options{Allocator: topology.AllocatorMinCrossZone, Hysteresis: 0.1}},
	} {
		b.Run("impl="+tc.name, func(b *testing.B) {
			var writes, flips int
			var cross float64
			for b.Loop() {
				writes, flips, cross = churn(400, tc.opts)
			}
			b.ReportMetric(float64(writes), "slice-writes")
			b.ReportMetric(float64(flips), "hint-flips")
			b.ReportMetric(cross, "cross-zone")
		})
	}
}
