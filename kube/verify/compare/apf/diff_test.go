package apfcompare

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

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fairslice/fairslice/flowschema"
)

var (
	diffSeed      = flag.Uint64("apfdiff.seed", 0, "seed for TestDifferential (0: derive from the clock)")
	diffScenarios = flag.Int("apfdiff.scenarios", 12, "number of random scenarios in TestDifferential")
	diffSteps     = flag.Int("apfdiff.steps", 60, "events per scenario")
	diffSave      = flag.String("apfdiff.save", "", "directory to write mismatching scenarios into")
	diffReplay    = flag.String("apfdiff.replay", "", "replay this saved scenario file (from -apfdiff.save) instead of random ones")
)

// scenario is a configuration, a server concurrency limit and a sequence
// of events. Its JSON form is what a mismatch is saved as.
type scenario struct {
	Seed     uint64             `json:"seed"`
	ServerCL int                `json:"serverConcurrency"`
	Config   *flowschema.Config `json:"config"`
	Requests []reqSpec          `json:"requests"`
	Events   []event            `json:"events"`
}

// event: "arrive" (the next request), "finish" or "cancel" a request by
// id, "advance" the clocks, or "adjust": one periodic borrowing
// adjustment on both sides.
type event struct {
	Kind string        `json:"kind"`
	ID   int           `json:"id,omitempty"`
	D    time.Duration `json:"d,omitempty"`
}

func i32(v int32) *int32 { return &v }

// randomScenario: 1–3 queuing levels with few, short queues (and maybe a
// reject-type one), a FlowSchema per level matching group g<k> with a
// random distinguisher, a small server limit (2 to 16 seats, where levels
// that may lend start at 0 seats until an adjustment sees their demand),
// and requests from six users in four namespaces, some in no tenant group
// (catch-all, reject type). One scenario in four uses the bootstrap
// configuration instead, where those requests land in global-default.
func randomScenario(seed uint64, steps int) *scenario {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	if r.IntN(4) == 0 {
		return randomEvents(r, &scenario{Seed: seed, ServerCL: 2 + r.IntN(15), Config: flowschema.DefaultConfig()}, 0, steps)
	}
	cfg := &flowschema.Config{}
	nLevels := 1 + r.IntN(3)
	dists := []string{"", flowschema.DistinguisherByUser, flowschema.DistinguisherByNamespace}
	for k := 0; k < nLevels+r.IntN(2); k++ {
		name := fmt.Sprintf("pl%d", k)
		pl := flowschema.PriorityLevelConfiguration{
			TypeMeta:   flowschema.TypeMeta{APIVersion: flowschema.APIVersion, Kind: flowschema.KindPL},
			ObjectMeta: flowschema.ObjectMeta{Name: name},
			Spec: flowschema.PriorityLevelConfigurationSpec{Type: flowschema.PriorityLevelTypeLimited,
				Limited: &flowschema.LimitedPriorityLevelConfiguration{
					NominalConcurrencyShares: i32(int32(1 + r.IntN(30))),
					LendablePercent:          i32(int32(r.IntN(3) * 25)),
					LimitResponse:            flowschema.LimitResponse{Type: flowschema.LimitResponseReject},
				}},
		}
		if k < nLevels {
			q := int32(1 + r.IntN(8))
			pl.Spec.Limited.LimitResponse = flowschema.LimitResponse{Type: flowschema.LimitResponseQueue,
				Queuing: &flowschema.QueuingConfiguration{Queues: q, HandSize: int32(1 + r.IntN(int(min(q, 3)))), QueueLengthLimit: int32(1 + r.IntN(4))}}
		}
		cfg.PriorityLevels = append(cfg.PriorityLevels, pl)
		fs := flowschema.FlowSchema{
			TypeMeta:   flowschema.TypeMeta{APIVersion: flowschema.APIVersion, Kind: flowschema.KindFS},
			ObjectMeta: flowschema.ObjectMeta{Name: fmt.Sprintf("fs%d", k)},
			Spec: flowschema.FlowSchemaSpec{
				PriorityLevelConfiguration: flowschema.PriorityLevelConfigurationReference{Name: name},
				MatchingPrecedence:         int32(100 + k),
				Rules: []flowschema.PolicyRulesWithSubjects{{
					Subjects: []flowschema.Subject{{Kind: flowschema.SubjectKindGroup, Group: &flowschema.GroupSubject{Name: fmt.Sprintf("g%d", k)}}},
					ResourceRules: []flowschema.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"},
						Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
				}},
			},
		}
		if d := dists[r.IntN(3)]; d != "" {
			fs.Spec.DistinguisherMethod = &flowschema.FlowDistinguisherMethod{Type: d}
		}
		cfg.FlowSchemas = append(cfg.FlowSchemas, fs)
	}
	return randomEvents(r, &scenario{Seed: seed, ServerCL: 2 + r.IntN(15), Config: cfg}, len(cfg.PriorityLevels), steps)
}

// randomEvents adds steps events to s; requests are in group g<k> for a
// random k below groups, or in none.
func randomEvents(r *rand.Rand, s *scenario, groups, steps int) *scenario {
	// finish and cancel events name random requests; run skips those that
	// are not executing or waiting at that point.
	for len(s.Events) < steps {
		switch x := r.IntN(100); {
		case x < 55:
			g := []string{"system:authenticated"}
			if k := r.IntN(groups + 1); k < groups {
				g = append(g, fmt.Sprintf("g%d", k))
			}
			s.Requests = append(s.Requests, reqSpec{User: fmt.Sprintf("u%d", r.IntN(6)), Groups: g,
				Namespace: fmt.Sprintf("ns%d", r.IntN(4)), Seats: uint64(1 + r.IntN(2)*r.IntN(3))})
			s.Events = append(s.Events, event{Kind: "arrive", ID: len(s.Requests) - 1})
		case x < 80:
			s.Events = append(s.Events, event{Kind: "finish", ID: r.IntN(max(len(s.Requests), 1))})
		case x < 88:
			s.Events = append(s.Events, event{Kind: "cancel", ID: r.IntN(max(len(s.Requests), 1))})
		case x < 95:
			s.Events = append(s.Events, event{Kind: "advance", D: time.Duration(r.IntN(20_000)) * time.Microsecond})
		default:
			s.Events = append(s.Events, event{Kind: "adjust"})
		}
	}
	return s
}

// coverage counts the final states seen, so that the test fails if the
// scenarios stop reaching queuing, rejection and time-outs.
var coverage = map[string]int{}

// run plays s on upstream's controller and apf.Controller and returns the
// first mismatch; it also compares upstream's dispatch metrics with apf's
// DispatchObserver events after every event and the borrowing metrics with
// its LevelLimits events after every adjustment.
func run(t *testing.T, s *scenario) string {
	up := newUpstream(t, s.Config, s.ServerCL)
	defer up.close()
	ours := newOurs(t, s.Config, s.ServerCL)
	defer ours.close()
	// The previous scenario's drivers have returned every request: nothing
	// writes to upstream's metrics any more.
	resetUpstreamMetrics()
	return play(s, s.Events, up, ours, coverage, func(ev event) string {
		if diff := compareDispatchMetrics(ours); diff != "" {
			return "dispatch metrics (-upstream +fairslice):\n" + diff
		}
		if ev.Kind != "adjust" {
			return ""
		}
		if diff := compareBorrowingMetrics(ours); diff != "" {
			return "borrowing metrics (-upstream +fairslice):\n" + diff
		}
		return ""
	})
}

// reconfigurer is a driver whose configuration can change mid-scenario.
type reconfigurer interface {
	// addLevel adds a queuing level pl<name> and a FlowSchema fs<name>
	// for group g<name>.
	addLevel(name string, queues, hand, qll, shares int32)
	// removeLevel removes level pl and then the FlowSchemas fss.
	removeLevel(pl string, fss []string)
}

// play plays the events evs of s on both drivers (events "add-level" and
// "remove-level" need reconfigurers) and returns the first mismatch. After
// every event it compares every request's outcome, the dispatch order, the
// debug dumps, and then what check reports. What one event dispatched in
// several levels is compared level by level: upstream applies new limits
// (an adjustment, a reconfiguration, the reaping of a removed level) level
// by level in map order. It counts the requests' final states in cov.
func play(s *scenario, evs []event, up, ours driver, cov map[string]int, check func(event) string) string {
	if diff := cmp.Diff(up.dumps(), ours.dumps()); diff != "" {
		return "initial dumps (-upstream +fairslice):\n" + diff
	}
	state := map[int]string{}
	arrived := 0
	// stretches are the parts of the dispatch order that one event
	// dispatched.
	var stretches [][2]int
	for step, ev := range evs {
		before := len(up.dispatchOrder())
		switch ev.Kind {
		case "arrive":
			arrived = ev.ID + 1
			up.arrive(ev.ID, &s.Requests[ev.ID])
			ours.arrive(ev.ID, &s.Requests[ev.ID])
		case "finish":
			if state[ev.ID] != "executing" {
				continue
			}
			up.finish(ev.ID)
			ours.finish(ev.ID)
		case "cancel":
			if state[ev.ID] != "waiting" {
				continue
			}
			up.cancel(ev.ID)
			ours.cancel(ev.ID)
		case "advance":
			up.advance(ev.D)
			ours.advance(ev.D)
		case "adjust":
			up.adjust()
			ours.adjust()
		case "add-level":
			up.(reconfigurer).addLevel("x", 4, 2, 3, 10)
			ours.(reconfigurer).addLevel("x", 4, 2, 3, 10)
		case "remove-level":
			pl, fss := removable(s.Config)
			up.(reconfigurer).removeLevel(pl, fss)
			ours.(reconfigurer).removeLevel(pl, fss)
		}
		for id := range arrived {
			u, o := up.outcome(id), ours.outcome(id)
			if u != o {
				return fmt.Sprintf("step %d (%+v): request %d (%+v): upstream %+v, fairslice %+v", step, ev, id, s.Requests[id], u, o)
			}
			if ev.Kind == "adjust" && state[id] == "waiting" && u.State == "executing" {
				cov["dispatched by an adjustment"]++
			}
			state[id] = u.State
		}
		uo, oo := up.dispatchOrder(), ours.dispatchOrder()
		if len(uo) > before+1 {
			stretches = append(stretches, [2]int{before, len(uo)})
		}
		level := func(id int) string { return s.Requests[id].levelOf(up, id) }
		for _, r := range stretches {
			byLevel(uo, r, level)
			byLevel(oo, r, level)
		}
		if diff := cmp.Diff(uo, oo); diff != "" {
			return fmt.Sprintf("step %d (%+v): dispatch order (-upstream +fairslice):\n%s", step, ev, diff)
		}
		if diff := cmp.Diff(up.dumps(), ours.dumps()); diff != "" {
			return fmt.Sprintf("step %d (%+v): debug dumps (-upstream +fairslice):\n%s", step, ev, diff)
		}
		if msg := check(ev); msg != "" {
			return fmt.Sprintf("step %d (%+v): %s", step, ev, msg)
		}
	}
	for id := range arrived {
		cov[state[id]]++
	}
	cov["queued dispatches"] += len(up.dispatchOrder())
	return ""
}

// levelOf is the priority level request id was classified to.
func (*reqSpec) levelOf(d driver, id int) string { return d.outcome(id).PriorityLevel }

// byLevel stable-sorts order[r[0]:r[1]] by priority level.
func byLevel(order []int, r [2]int, level func(int) string) {
	if r[1] > len(order) {
		return
	}
	slices.SortStableFunc(order[r[0]:r[1]], func(a, b int) int { return strings.Compare(level(a), level(b)) })
}

// TestDifferential runs random scenarios through upstream's APF controller
// (NewTestable, fake clientset, fake event clock) and through apf, and
// requires after every event the same classification (FlowSchema,
// priority level, distinguisher), state and rejection reason of every
// request, the same dispatch order, and the same text of the three debug
// endpoints (rows sorted): queue of every waiting request, per-queue
// counts and virtual times, per-level totals.
func TestDifferential(t *testing.T) {
	if *diffReplay != "" {
		s, err := loadScenario(*diffReplay)
		if err != nil {
			t.Fatal(err)
		}
		if msg := run(t, s); msg != "" {
			t.Fatalf("%s (seed %d, server %d seats) mismatch:\n%s", *diffReplay, s.Seed, s.ServerCL, msg)
		}
		return
	}
	seed := *diffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -apfdiff.seed=%d -apfdiff.scenarios=1)", seed, seed)
	for i := range *diffScenarios {
		s := randomScenario(seed+uint64(i), *diffSteps)
		if msg := run(t, s); msg != "" {
			where := save(t, s)
			t.Fatalf("scenario seed %d (server %d seats) mismatch%s:\n%s", s.Seed, s.ServerCL, where, msg)
		}
	}
	t.Logf("final states: %v", coverage)
	if *diffScenarios >= 12 {
		want := []string{"waiting", "executing", "done", "queued dispatches", "rejected:queue-full", "rejected:concurrency-limit", "rejected:time-out", "dispatched by an adjustment"}
		for _, k := range want {
			if coverage[k] == 0 {
				t.Errorf("no request ended %q: the scenarios do not exercise it", k)
			}
		}
	}
}

// loadScenario reads a scenario saved by save.
func loadScenario(path string) (*scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s scenario
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Config == nil || s.ServerCL <= 0 {
		return nil, fmt.Errorf("%s: not a saved scenario (no config or server concurrency)", path)
	}
	return &s, nil
}

// A saved scenario loads back as it was and replays without a mismatch:
// what -apfdiff.replay runs.
func TestScenarioFileReplay(t *testing.T) {
	dir := t.TempDir()
	old := *diffSave
	*diffSave = dir
	defer func() { *diffSave = old }()
	s := randomScenario(7, 40)
	if where := save(t, s); where == "" {
		t.Fatal("scenario not saved")
	}
	got, err := loadScenario(filepath.Join(dir, "apf-mismatch-7.json"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("loaded scenario differs (-saved +loaded):\n%s", diff)
	}
	if msg := run(t, got); msg != "" {
		t.Errorf("replayed scenario mismatch: %s", msg)
	}
	if _, err := loadScenario(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("loadScenario(missing file) = nil error")
	}
}

func save(t *testing.T, s *scenario) string {
	if *diffSave == "" {
		return ""
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	p := filepath.Join(*diffSave, fmt.Sprintf("apf-mismatch-%d.json", s.Seed))
	if err := os.MkdirAll(*diffSave, 0o755); err != nil || os.WriteFile(p, b, 0o644) != nil {
		t.Logf("could not save %s", p)
		return ""
	}
	return " (saved as " + p + "; replay with -apfdiff.replay=" + p + ")"
}
