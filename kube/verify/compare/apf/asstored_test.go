package apfcompare

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/fairslice/fairslice/flowschema"
	kubeflowcontrol "github.com/fairslice/fairslice/kube/flowcontrol"
)

// The differential test of configurations that skipped the API server's
// defaulting: objects loaded into the fake clientsets as they are (queues,
// hand size or queue length limit 0, no limitResponse.type, no
// lendablePercent, matchingPrecedence 0), digested by upstream's
// controller and kube/flowcontrol's through their informers. Upstream uses
// such objects as they are; so must kube/flowcontrol.
//
// Left out, because upstream's controller crashes on them: a Limited level
// without nominalConcurrencyShares (a nil dereference), a queuing section
// with queues 0 and hand size 0 on a level it keeps (a division by zero
// when it computes the max seats), and a distinguisher method other than
// ByUser and ByNamespace at a level with more than one queue.

// storedLevel builds a Limited priority level as a fake clientset would
// hold it, with only the fields given.
func storedLevel(name string, shares int32, lr flowschema.LimitResponse) flowschema.PriorityLevelConfiguration {
	return flowschema.PriorityLevelConfiguration{
		TypeMeta:   flowschema.TypeMeta{APIVersion: flowschema.APIVersion, Kind: flowschema.KindPL},
		ObjectMeta: flowschema.ObjectMeta{Name: name},
		Spec: flowschema.PriorityLevelConfigurationSpec{Type: flowschema.PriorityLevelTypeLimited,
			Limited: &flowschema.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: i32(shares), LimitResponse: lr}},
	}
}

// storedSchema builds a FlowSchema for the members of group, as a fake
// clientset would hold it (dist "" for no distinguisher).
func storedSchema(name, level, group string, precedence int32, dist string) flowschema.FlowSchema {
	fs := flowschema.FlowSchema{
		TypeMeta:   flowschema.TypeMeta{APIVersion: flowschema.APIVersion, Kind: flowschema.KindFS},
		ObjectMeta: flowschema.ObjectMeta{Name: name},
		Spec: flowschema.FlowSchemaSpec{
			PriorityLevelConfiguration: flowschema.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
			Rules: []flowschema.PolicyRulesWithSubjects{{
				Subjects: []flowschema.Subject{{Kind: flowschema.SubjectKindGroup, Group: &flowschema.GroupSubject{Name: group}}},
				ResourceRules: []flowschema.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"},
					Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
			}},
		},
	}
	if dist != "" {
		fs.Spec.DistinguisherMethod = &flowschema.FlowDistinguisherMethod{Type: dist}
	}
	return fs
}

func queuing(queues, hand, qll int32) *flowschema.QueuingConfiguration {
	return &flowschema.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: qll}
}

// randomStoredConfig: 1–3 Limited levels pl<k>, each with a FlowSchema
// fs<k> for group g<k>, whose fields are often zero or missing: a limit
// response of type "", Queue or Reject with or without a queuing section
// (so some levels are broken and their FlowSchemas dangle), queues -1 to
// 8 with hand sizes that may only fit without the default 64 queues, queue
// length limits from -1 to 3, shares from 0, lendable and borrowing
// percentages often unset, and matching precedences often 0 (ahead of
// every defaulted one) with the FlowSchemas' groups overlapping.
func randomStoredConfig(r *rand.Rand) *flowschema.Config {
	cfg := &flowschema.Config{}
	n := 1 + r.IntN(3)
	types := []string{"", "", flowschema.LimitResponseQueue, flowschema.LimitResponseQueue, flowschema.LimitResponseReject}
	dists := []string{"", flowschema.DistinguisherByUser, flowschema.DistinguisherByNamespace}
	for k := range n {
		lr := flowschema.LimitResponse{Type: types[r.IntN(len(types))]}
		// A queuing section where the type calls for one, usually; the
		// other way round the level is broken and ignored.
		if (lr.Type != flowschema.LimitResponseReject) != (r.IntN(8) == 0) {
			q := int32(r.IntN(10) - 1)
			var hand int32
			if q <= 0 {
				// Not 0: upstream divides by it. Up to 24, which with the
				// default 64 queues would need more than 60 bits.
				hand = int32(1 + r.IntN(24))
				if r.IntN(6) == 0 {
					hand = -hand
				}
			} else {
				hand = int32(r.IntN(int(q) + 2)) // 0 and q+1 do not deal
			}
			lr.Queuing = queuing(q, hand, int32(r.IntN(5)-1))
		}
		pl := storedLevel(fmt.Sprintf("pl%d", k), int32(r.IntN(40)), lr)
		if r.IntN(3) == 0 {
			pl.Spec.Limited.LendablePercent = i32(int32(r.IntN(5) * 25))
		}
		if r.IntN(3) == 0 {
			pl.Spec.Limited.BorrowingLimitPercent = i32(int32(r.IntN(4) * 50))
		}
		cfg.PriorityLevels = append(cfg.PriorityLevels, pl)
		prec := int32(0)
		if r.IntN(2) == 0 {
			prec = int32(100 + r.IntN(3))
		}
		cfg.FlowSchemas = append(cfg.FlowSchemas, storedSchema(fmt.Sprintf("fs%d", k), pl.Name, fmt.Sprintf("g%d", k), prec, dists[r.IntN(3)]))
		if k > 0 && r.IntN(3) == 0 {
			// A second FlowSchema for the previous group: which one wins
			// depends on precedences that defaulting would change.
			cfg.FlowSchemas = append(cfg.FlowSchemas, storedSchema(fmt.Sprintf("fs%d-also", k), pl.Name, fmt.Sprintf("g%d", k-1), prec, dists[r.IntN(3)]))
		}
	}
	r.Shuffle(len(cfg.FlowSchemas), func(i, j int) { cfg.FlowSchemas[i], cfg.FlowSchemas[j] = cfg.FlowSchemas[j], cfg.FlowSchemas[i] })
	return cfg
}

// storedCases are named configurations that only behave as upstream if
// they are not defaulted. seats are the max seats both sides must report.
var storedCases = []struct {
	name     string
	serverCL int
	cfg      *flowschema.Config
	seats    map[string]uint64
}{
	{
		// kubernetes-style objects from issue 30: defaulted, the level
		// would get 64 queues, which a hand of 20 cannot be dealt from.
		name: "queues 0, hand 20, no type", serverCL: 100,
		cfg: &flowschema.Config{
			PriorityLevels: []flowschema.PriorityLevelConfiguration{storedLevel("p", 10000, flowschema.LimitResponse{Queuing: queuing(0, 20, 0)})},
			FlowSchemas:    []flowschema.FlowSchema{storedSchema("f", "p", "g0", 100, flowschema.DistinguisherByUser)},
		},
		seats: map[string]uint64{"p": 5},
	},
	{
		name: "queuing section without type", serverCL: 4,
		cfg: &flowschema.Config{
			PriorityLevels: []flowschema.PriorityLevelConfiguration{storedLevel("p", 30, flowschema.LimitResponse{Queuing: queuing(4, 2, 2)})},
			FlowSchemas:    []flowschema.FlowSchema{storedSchema("f", "p", "g0", 100, flowschema.DistinguisherByUser)},
		},
		seats: map[string]uint64{"p": 1},
	},
	{
		name: "queue length limit 0", serverCL: 3,
		cfg: &flowschema.Config{
			PriorityLevels: []flowschema.PriorityLevelConfiguration{storedLevel("p", 30, flowschema.LimitResponse{Type: flowschema.LimitResponseQueue, Queuing: queuing(3, 2, 0)})},
			FlowSchemas:    []flowschema.FlowSchema{storedSchema("f", "p", "g0", 100, flowschema.DistinguisherByNamespace)},
		},
		seats: map[string]uint64{"p": 1},
	},
	{
		name: "negative hand, queues 0", serverCL: 600,
		cfg: &flowschema.Config{
			PriorityLevels: []flowschema.PriorityLevelConfiguration{storedLevel("p", 30, flowschema.LimitResponse{Type: flowschema.LimitResponseQueue, Queuing: queuing(0, -1, 0)})},
			FlowSchemas:    []flowschema.FlowSchema{storedSchema("f", "p", "g0", 100, "")},
		},
		seats: map[string]uint64{"p": 1},
	},
	{
		// Defaulted, fs-late's 100 would win over fs-early's 0 (1000).
		name: "matching precedence 0", serverCL: 8,
		cfg: &flowschema.Config{
			PriorityLevels: []flowschema.PriorityLevelConfiguration{
				storedLevel("early", 10, flowschema.LimitResponse{Type: flowschema.LimitResponseReject}),
				storedLevel("late", 10, flowschema.LimitResponse{Type: flowschema.LimitResponseQueue, Queuing: queuing(2, 1, 1)}),
			},
			FlowSchemas: []flowschema.FlowSchema{
				storedSchema("fs-late", "late", "g0", 100, flowschema.DistinguisherByUser),
				storedSchema("fs-early", "early", "g0", 0, ""),
			},
		},
	},
	{
		name: "queue type without queuing section, reject type with one", serverCL: 6,
		cfg: &flowschema.Config{
			PriorityLevels: []flowschema.PriorityLevelConfiguration{
				storedLevel("q", 10, flowschema.LimitResponse{Type: flowschema.LimitResponseQueue}),
				storedLevel("r", 10, flowschema.LimitResponse{Type: flowschema.LimitResponseReject, Queuing: queuing(4, 2, 2)}),
			},
			FlowSchemas: []flowschema.FlowSchema{storedSchema("fq", "q", "g0", 100, ""), storedSchema("fr", "r", "g1", 100, "")},
		},
		seats: map[string]uint64{"q": 0, "r": 0},
	},
	{
		// Upstream's queue set takes a negative number of queues as its
		// code for exemption: every request is admitted.
		name: "negative queues", serverCL: 2,
		cfg: &flowschema.Config{
			PriorityLevels: []flowschema.PriorityLevelConfiguration{storedLevel("p", 30, flowschema.LimitResponse{Type: flowschema.LimitResponseQueue, Queuing: queuing(-1, 1, 5)})},
			FlowSchemas:    []flowschema.FlowSchema{storedSchema("f", "p", "g0", 100, "")},
		},
	},
	{
		name: "exempt without shares, limited without lendable or borrowing", serverCL: 10,
		cfg: &flowschema.Config{
			PriorityLevels: []flowschema.PriorityLevelConfiguration{
				{
					TypeMeta:   flowschema.TypeMeta{APIVersion: flowschema.APIVersion, Kind: flowschema.KindPL},
					ObjectMeta: flowschema.ObjectMeta{Name: flowschema.PriorityLevelNameExempt},
					Spec: flowschema.PriorityLevelConfigurationSpec{Type: flowschema.PriorityLevelTypeExempt,
						Exempt: &flowschema.ExemptPriorityLevelConfiguration{}},
				},
				storedLevel("p", 5, flowschema.LimitResponse{Type: flowschema.LimitResponseQueue, Queuing: queuing(2, 2, 1)}),
			},
			FlowSchemas: []flowschema.FlowSchema{storedSchema("f", "p", "g0", 100, flowschema.DistinguisherByUser)},
		},
	},
}

// levelLimits are a level's nominal, lower and upper limits.
type levelLimits [3]int

// upstreamLevelLimits reads upstream's nominal, lower and upper limit
// metrics, which its controller sets for every level it digests.
func upstreamLevelLimits() (map[string]levelLimits, error) {
	out := map[string]levelLimits{}
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, err
	}
	slot := map[string]int{"apiserver_flowcontrol_nominal_limit_seats": 0, "apiserver_flowcontrol_lower_limit_seats": 1,
		"apiserver_flowcontrol_upper_limit_seats": 2}
	for _, mf := range mfs {
		i, ok := slot[mf.GetName()]
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "priority_level" {
					v := out[lp.GetValue()]
					v[i] = int(m.GetGauge().GetValue())
					out[lp.GetValue()] = v
				}
			}
		}
	}
	return out, nil
}

// levelNames are the configuration's level names and the mandatory ones.
func levelNames(cfg *flowschema.Config) []string {
	names := []string{flowschema.PriorityLevelNameExempt, flowschema.PriorityLevelNameCatchAll}
	for _, pl := range cfg.PriorityLevels {
		if !slices.Contains(names, pl.Name) {
			names = append(names, pl.Name)
		}
	}
	return names
}

var storedCoverage = map[string]int{}

// runStored loads s's configuration, not defaulted, into upstream's
// controller and kube/flowcontrol's and returns the first mismatch: of
// each level's max seats, of its nominal, lower and upper limits (from
// upstream's metrics, read before kube/flowcontrol, which writes the same
// series, starts), then of s's events as play compares them.
func runStored(t *testing.T, s *scenario) (string, map[string]uint64) {
	resetUpstreamMetrics()
	up := newIfcSideStored(t, s.Config, s.ServerCL, false, false)
	defer up.close()
	upLimits, err := upstreamLevelLimits()
	if err != nil {
		t.Fatal(err)
	}
	ours := newIfcSideStored(t, s.Config, s.ServerCL, true, false)
	defer ours.close()
	ourLimits := map[string]levelLimits{}
	for _, d := range ours.ctl.(*kubeflowcontrol.Controller).Dump() {
		ourLimits[d.Name] = levelLimits{d.Limits.Nominal, d.Limits.Lower, d.Limits.Upper}
	}
	if diff := cmp.Diff(upLimits, ourLimits); diff != "" {
		return "nominal, lower and upper limits (-upstream +fairslice):\n" + diff, nil
	}
	upSeats, ourSeats := map[string]uint64{}, map[string]uint64{}
	for _, n := range levelNames(s.Config) {
		upSeats[n], ourSeats[n] = up.ctl.GetMaxSeats(n), ours.ctl.GetMaxSeats(n)
	}
	if diff := cmp.Diff(upSeats, ourSeats); diff != "" {
		return "max seats (-upstream +fairslice):\n" + diff, nil
	}
	return play(s, s.Events, up, ours, storedCoverage, func(event) string { return "" }), upSeats
}

// TestDifferentialAsStored runs configurations as a fake clientset holds
// them, never defaulted (the named storedCases, then random ones from a
// logged seed), through upstream's controller and kube/flowcontrol's, and
// requires the same max seats and nominal, lower and upper limits of
// every level, then, on random requests, the same classification
// (FlowSchema, level, distinguisher), states and rejections, dispatch
// order and debug dumps after every event.
func TestDifferentialAsStored(t *testing.T) {
	seed := *diffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -apfdiff.seed=%d)", seed, seed)
	for i, c := range storedCases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			s := randomEvents(r, &scenario{Seed: seed, ServerCL: c.serverCL, Config: c.cfg}, 2, *diffSteps)
			msg, seats := runStored(t, s)
			if msg != "" {
				t.Fatalf("mismatch:\n%s", msg)
			}
			for n, want := range c.seats {
				if seats[n] != want {
					t.Errorf("GetMaxSeats(%q) = %d on both, want %d", n, seats[n], want)
				}
			}
		})
	}
	n := max(1, *diffScenarios)
	for i := range n {
		r := rand.New(rand.NewPCG(seed+uint64(i), 30))
		cfg := randomStoredConfig(r)
		s := randomEvents(r, &scenario{Seed: seed + uint64(i), ServerCL: 2 + r.IntN(15), Config: cfg}, len(cfg.PriorityLevels), *diffSteps)
		if msg, _ := runStored(t, s); msg != "" {
			t.Fatalf("random configuration %d (seed %d, server %d seats) mismatch%s:\n%s", i, seed, s.ServerCL, save(t, s), msg)
		}
	}
	t.Logf("final states: %v", storedCoverage)
}
