package topologycompare

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/kube/internal/kubescenario"
	"github.com/fairslice/fairslice/topology"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/endpointslice/topologycache"
)

var (
	diffSeed     = flag.Uint64("diff.seed", 0, "seed for the differential tests (0: derive from the clock)")
	diffClusters = flag.Int("diff.clusters", 1500, "random clusters per differential test")
	diffServices = flag.Int("diff.services", 250, "random Services in TestDifferentialReconcile (upstream's reconciler with a fake clientset costs about 30 ms each)")
	diffRetries  = flag.Int("diff.retries", 400, "upstream reruns allowed to reproduce a map-order tie-break")
	diffSave     = flag.String("diff.save", "", "directory to save mismatching cases into")
	diffReplay   = flag.String("diff.replay", "", "glob of saved AddHints cases to replay (TestDifferentialReplay)")
)

func seed(t *testing.T) uint64 {
	s := *diffSeed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -diff.seed=%d)", s, s)
	return s
}

// observation is what must match between upstream and fairslice.
type observation struct {
	Events      []string
	HintsByZone map[string]int
	// Created, Updated and Unchanged list each slice as
	// "name: endpoint ..." with every endpoint's hints; a ready endpoint of
	// a slice being written that is hinted for another zone than its own
	// shows as ">*", since which receiving zone it gets is a map-order
	// choice upstream (HintsByZone holds the counts).
	Created, Updated, Unchanged []string
	// Received counts, per zone, the ready endpoints of slices being
	// written that are hinted for it from another zone.
	Received map[string]int
}

// masked is o with the hints received from other zones summed over
// zones: what upstream decides independently of map order even when it
// runs out of endpoints to move and picks receiving zones at random.
func (o observation) masked() observation {
	m := o
	m.HintsByZone = map[string]int{}
	total := 0
	for z, n := range o.HintsByZone {
		if k := n - o.Received[z]; k != 0 {
			m.HintsByZone[z] = k
		}
	}
	for _, n := range o.Received {
		total += n
	}
	m.Received = map[string]int{"*": total}
	return m
}

func render(list []*topology.Slice, written bool) []string {
	out := []string{}
	for _, s := range list {
		var b strings.Builder
		b.WriteString(s.Name + ":")
		for _, e := range s.Endpoints {
			fmt.Fprintf(&b, " %s/%s/%s", strings.Join(e.Addresses, ","), e.Zone, e.Conditions.Ready)
			if e.Hints == nil {
				continue
			}
			zs := e.Hints.ForZones
			if written && e.Conditions.Ready == topology.True && len(zs) == 1 && zs[0] != e.Zone {
				b.WriteString(">*")
				continue
			}
			fmt.Fprintf(&b, ">%s", strings.Join(zs, ","))
			if len(e.Hints.ForNodes) > 0 {
				fmt.Fprintf(&b, "@%s", strings.Join(e.Hints.ForNodes, ","))
			}
		}
		out = append(out, b.String())
	}
	return out
}

func observe(create, update, unchanged []*topology.Slice, events []topology.Event) observation {
	o := observation{Events: []string{}}
	for _, e := range events {
		o.Events = append(o.Events, e.Type+" "+e.Reason+" "+e.Message)
	}
	all := slices.Concat(create, update, unchanged)
	o.HintsByZone = kubescenario.Summarize(all, nil).HintsByZone
	o.Created, o.Updated, o.Unchanged = render(create, true), render(update, true), render(unchanged, false)
	o.Received = map[string]int{}
	for _, s := range slices.Concat(create, update) {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == topology.True && e.Hints != nil && len(e.Hints.ForZones) == 1 && e.Hints.ForZones[0] != e.Zone {
				o.Received[e.Hints.ForZones[0]]++
			}
		}
	}
	return o
}

func fromAPI(list []*discovery.EndpointSlice) []*topology.Slice {
	out := make([]*topology.Slice, len(list))
	for i, s := range list {
		out[i] = adapter.SliceFromAPI(s)
	}
	return out
}

// runUpstream runs upstream's SetNodes and AddHints on a copy of c.
func runUpstream(c *addHintsCase) observation {
	c = c.clone()
	tc := topologycache.NewTopologyCache()
	tc.SetNodes(logr.Discard(), c.Nodes)
	if c.HadHints {
		tc.SetHints("ns/svc", discovery.AddressTypeIPv4, topologycache.EndpointZoneInfo{})
	}
	si := &topologycache.SliceInfo{ServiceKey: "ns/svc", AddressType: discovery.AddressTypeIPv4,
		ToCreate: c.ToCreate, ToUpdate: c.ToUpdate, Unchanged: c.Unchanged}
	create, update, events := tc.AddHints(logr.Discard(), si)
	var evs []topology.Event
	for _, e := range events {
		evs = append(evs, topology.Event{Type: e.EventType, Reason: e.Reason, Message: e.Message})
	}
	return observe(fromAPI(create), fromAPI(update), fromAPI(si.Unchanged), evs)
}

// runOurs runs fairslice's NewCapacity and AddHints on a copy of c.
func runOurs(c *addHintsCase) (observation, error) {
	c = c.clone()
	nodes := adapter.NodesFromAPI(c.Nodes)
	si := &topology.SliceInfo{AddressType: "IPv4", ToCreate: fromAPI(c.ToCreate), ToUpdate: fromAPI(c.ToUpdate), Unchanged: fromAPI(c.Unchanged)}
	r := topology.AddHints(topology.NewCapacity(nodes), si, topology.Options{HadHints: c.HadHints})
	return observe(si.ToCreate, si.ToUpdate, si.Unchanged, r.Events), nil
}

// verdict says how a case compared.
type verdict int

const (
	same       verdict = iota // the first upstream run matches
	tie                       // a rerun matches: upstream broke a tie in map order
	randomPick                // upstream's own runs differ in which zones receive; all else matches
	differ
)

// compareCase compares fairslice with upstream on c and returns the diff
// against the first upstream run when they differ.
func compareCase(c *addHintsCase) (verdict, string) {
	ours, err := runOurs(c)
	if err != nil {
		return differ, "fairslice: " + err.Error()
	}
	first := runUpstream(c)
	if cmp.Equal(first, ours) {
		return same, ""
	}
	varies := false
	for range *diffRetries {
		up := runUpstream(c)
		if cmp.Equal(up, ours) {
			return tie, ""
		}
		varies = varies || !cmp.Equal(up.HintsByZone, first.HintsByZone)
	}
	// When upstream runs out of endpoints to move it sends each one to a
	// receiving zone picked in map order, so its counts per zone vary from
	// run to run; fairslice fills receiving zones in name order, one of
	// upstream's possible outcomes. Everything else must still match.
	if varies && cmp.Equal(first.masked(), ours.masked()) {
		return randomPick, ""
	}
	return differ, cmp.Diff(first, ours)
}

func save(t *testing.T, name string, v any) {
	if *diffSave == "" {
		return
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	p := filepath.Join(*diffSave, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Error(err)
		return
	}
	t.Logf("saved %s", p)
}

// TestDifferentialAddHints compares fairslice's AddHints with upstream's
// topology cache on random clusters and plans.
func TestDifferentialAddHints(t *testing.T) {
	s := seed(t)
	rng := rand.New(rand.NewPCG(s, 0x70b0))
	n := *diffClusters
	if testing.Short() {
		n = min(n, 300)
	}
	failures, enabled := 0, 0
	verdicts := map[verdict]int{}
	reasons := map[string]int{}
	for i := range n {
		c := randomAddHintsCase(rng)
		v, diff := compareCase(c)
		verdicts[v]++
		if v != differ {
			o, _ := runOurs(c)
			if len(o.HintsByZone) > 0 {
				enabled++
			}
			for _, e := range o.Events {
				reasons[strings.SplitN(e, " (", 2)[0]]++
			}
			continue
		}
		failures++
		if failures <= 3 {
			t.Errorf("cluster %d (seed %d): upstream and fairslice differ (-upstream +fairslice):\n%s", i, s, diff)
			save(t, fmt.Sprintf("addhints-%d-%d.json", s, i), c)
		}
	}
	t.Logf("%d clusters: %d with hints on; %d matched upstream's first run, %d a rerun (map-order tie), %d all but upstream's random receiving zones; %d mismatches",
		n, enabled, verdicts[same], verdicts[tie], verdicts[randomPick], failures)
	for r, k := range reasons {
		t.Logf("  %5d  %s", k, r)
	}
}

// TestDifferentialReplay replays saved AddHints cases (-diff.replay).
func TestDifferentialReplay(t *testing.T) {
	pattern := *diffReplay
	if pattern == "" {
		pattern = "testdata/addhints-*.json"
	}
	forEachSaved(t, pattern, func(f string, b []byte) {
		var c addHintsCase
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if v, diff := compareCase(&c); v == differ {
			t.Errorf("%s: upstream and fairslice differ (-upstream +fairslice):\n%s", f, diff)
		}
	})
}

// forEachSaved calls fn with the name and contents of every file matching
// pattern (saved cases to replay).
func forEachSaved(t *testing.T, pattern string, fn func(file string, data []byte)) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatalf("bad replay pattern %q: %v", pattern, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fn(f, b)
	}
}
