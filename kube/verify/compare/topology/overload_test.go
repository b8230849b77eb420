package topologycompare

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/topology"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/endpointslice/topologycache"
)

// perturbNodes is a node change: nodes turning ready or not ready, CPU
// changes, nodes removed or added (possibly in a new zone), or now and then
// a different cluster altogether; or no change to the nodes that count.
func perturbNodes(rng *rand.Rand, nodes []*corev1.Node) []*corev1.Node {
	switch rng.IntN(10) {
	case 0:
		n, _ := randomNodes(rng)
		return n
	case 1, 2:
		return nodes // a change to some other node
	}
	var out []*corev1.Node
	for _, n := range nodes {
		n = n.DeepCopy()
		switch rng.IntN(16) {
		case 0:
			n.Status.Conditions[0].Status = corev1.ConditionFalse
		case 1:
			n.Status.Conditions[0].Status = corev1.ConditionTrue
		case 2:
			n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(cpuChoices[rng.IntN(len(cpuChoices))])
		case 3:
			continue // removed
		}
		out = append(out, n)
	}
	if rng.IntN(5) == 0 {
		zone := fmt.Sprintf("zone-%c", 'a'+rng.IntN(6))
		out = append(out, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "added", Labels: map[string]string{corev1.LabelTopologyZone: zone}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuChoices[rng.IntN(len(cpuChoices))])},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		})
	}
	return out
}

// TestDifferentialOverloaded compares Capacity.Overloaded with upstream's
// TopologyCache.GetOverloadedServices: AddHints on a random cluster, then a
// node change (SetNodes), then whether the Service is to be requeued.
// Upstream's hint counts are compared from a run whose slices match
// fairslice's (a rerun when upstream broke a tie in map order); cases where
// no run matches within -diff.retries are counted and skipped, as
// TestDifferentialAddHints covers them.
func TestDifferentialOverloaded(t *testing.T) {
	s := seed(t)
	rng := rand.New(rand.NewPCG(s, 0x0e41))
	n := *diffClusters
	if testing.Short() {
		n = min(n, 300)
	}
	var hinted, overloaded, skipped, failures int
	for i := range n {
		c := randomAddHintsCase(rng)
		after := perturbNodes(rng, c.Nodes)

		nodes := adapter.NodesFromAPI(c.Nodes)
		nodesAfter := adapter.NodesFromAPI(after)
		cc := c.clone()
		si := &topology.SliceInfo{AddressType: "IPv4", ToCreate: fromAPI(cc.ToCreate), ToUpdate: fromAPI(cc.ToUpdate), Unchanged: fromAPI(cc.Unchanged)}
		r := topology.AddHints(topology.NewCapacity(nodes), si, topology.Options{HadHints: c.HadHints})
		ours := observe(si.ToCreate, si.ToUpdate, si.Unchanged, r.Events)
		got := topology.NewCapacity(nodesAfter).Overloaded(r.HintsByZone)

		matched := false
		var want bool
		for range 1 + *diffRetries {
			uc := c.clone()
			tc := topologycache.NewTopologyCache()
			tc.SetNodes(logr.Discard(), uc.Nodes)
			if uc.HadHints {
				tc.SetHints("ns/svc", discovery.AddressTypeIPv4, topologycache.EndpointZoneInfo{})
			}
			usi := &topologycache.SliceInfo{ServiceKey: "ns/svc", AddressType: discovery.AddressTypeIPv4,
				ToCreate: uc.ToCreate, ToUpdate: uc.ToUpdate, Unchanged: uc.Unchanged}
			create, update, events := tc.AddHints(logr.Discard(), usi)
			var evs []topology.Event
			for _, e := range events {
				evs = append(evs, topology.Event{Type: e.EventType, Reason: e.Reason, Message: e.Message})
			}
			if !cmp.Equal(observe(fromAPI(create), fromAPI(update), fromAPI(usi.Unchanged), evs), ours) {
				continue
			}
			tc.SetNodes(logr.Discard(), after)
			want = slices.Contains(tc.GetOverloadedServices(), "ns/svc")
			matched = true
			break
		}
		if !matched {
			skipped++
			continue
		}
		if len(r.HintsByZone) > 0 {
			hinted++
		}
		if want {
			overloaded++
		}
		if got != want {
			failures++
			if failures <= 3 {
				t.Errorf("cluster %d (seed %d): Overloaded(%v) = %v, upstream's GetOverloadedServices says %v", i, s, r.HintsByZone, got, want)
				save(t, fmt.Sprintf("overloaded-%d-%d.json", s, i), struct {
					Case  *addHintsCase  `json:"case"`
					After []*corev1.Node `json:"nodesAfter"`
				}{c, after})
			}
		}
	}
	t.Logf("%d clusters: %d with hints, %d of them overloaded after the node change; %d skipped (no upstream run matched); %d mismatches",
		n, hinted, overloaded, skipped, failures)
}
