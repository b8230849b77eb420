package topologycompare

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fairslice/fairslice/topology"
	"github.com/google/go-cmp/cmp"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/endpointslice/trafficdist"
)

// TestDifferentialTrafficDistribution runs upstream's
// trafficdist.ReconcileHints and fairslice's ReconcileTrafficDistribution
// on the same random plans (with node names and stale zone and node hints)
// for every spec.trafficDistribution value, and requires the same slices
// created, updated and left unchanged, hints included.
func TestDifferentialTrafficDistribution(t *testing.T) {
	s := seed(t)
	rng := rand.New(rand.NewPCG(s, 0x7d))
	n := *diffClusters
	if testing.Short() {
		n = min(n, 300)
	}
	values := []string{topology.PreferClose, topology.PreferSameZone, topology.PreferSameNode, "Unknown", ""}
	failures := 0
	for i := range n {
		c := randomAddHintsCase(rng)
		for _, list := range [][]*discovery.EndpointSlice{c.ToCreate, c.ToUpdate, c.Unchanged} {
			for _, sl := range list {
				for k := range sl.Endpoints {
					e := &sl.Endpoints[k]
					if rng.IntN(8) != 0 {
						e.NodeName = ptr(fmt.Sprintf("node-%d", rng.IntN(4)))
					}
					if e.Hints != nil && rng.IntN(3) == 0 {
						e.Hints.ForNodes = []discovery.ForNode{{Name: fmt.Sprintf("node-%d", rng.IntN(4))}}
					}
				}
			}
		}
		td := values[rng.IntN(len(values))]
		up := c.clone()
		var tdp *string
		if td != "" {
			tdp = &td
		}
		create, update, unchanged := trafficdist.ReconcileHints(tdp, up.ToCreate, up.ToUpdate, up.Unchanged)
		want := observe(fromAPI(create), fromAPI(update), fromAPI(unchanged), nil)

		ours := c.clone()
		si := &topology.SliceInfo{AddressType: "IPv4", ToCreate: fromAPI(ours.ToCreate), ToUpdate: fromAPI(ours.ToUpdate), Unchanged: fromAPI(ours.Unchanged)}
		topology.ReconcileTrafficDistribution(si, topology.PolicyFor(nil, td, true))
		got := observe(si.ToCreate, si.ToUpdate, si.Unchanged, nil)
		if diff := cmp.Diff(want, got); diff != "" {
			failures++
			if failures <= 3 {
				t.Errorf("plan %d (seed %d), trafficDistribution %q (-upstream +fairslice):\n%s", i, s, td, diff)
			}
		}
	}
	t.Logf("%d plans, %d mismatches", n, failures)
}
