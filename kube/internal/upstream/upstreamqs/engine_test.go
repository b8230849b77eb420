package upstreamqs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairslice/fairslice/fairqueue/scenario"
)

// coreTestdata holds the scenarios whose golden outputs the core module
// checks fairqueue against; those outputs claim to be upstream's.
const coreTestdata = "../../../../fairqueue/scenario/testdata"

func run(t *testing.T, s *scenario.Scenario) (res []scenario.Result, panicked bool, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			panicked = true
		}
	}()
	res, err = scenario.Run(s, New())
	return res, false, err
}

func TestEngineMatchesCoreGoldens(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(coreTestdata, "*.json"))
	if len(files) == 0 {
		t.Fatalf("no scenarios in %s", coreTestdata)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenario.Parse(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		res, panicked, err := run(t, s)
		if filepath.Base(name) == "stale-queue-removal.json" {
			if !panicked {
				t.Errorf("%s: upstream did not panic (results %v, error %v)", name, res, err)
			}
			continue
		}
		if err != nil || panicked {
			t.Fatalf("%s: error %v, panicked %v", name, err, panicked)
		}
		want, err := os.ReadFile(strings.TrimSuffix(name, ".json") + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		_ = scenario.WriteResults(&got, res)
		if got.String() != string(want) {
			t.Errorf("%s: upstream results =\n%swant\n%s", name, got.String(), want)
		}
	}
}

// hostLog is a scenario.Host that records calls.
type hostLog struct{ calls []string }

func (h *hostLog) Dispatched(i int) { h.calls = append(h.calls, "dispatched "+string(rune('A'+i))) }
func (h *hostLog) Schedule(at time.Duration, token int) {
	h.calls = append(h.calls, "schedule "+at.String())
}
func (h *hostLog) Fail(err error) { h.calls = append(h.calls, "fail "+err.Error()) }

// TestEngineDefersReleases checks that a final-seat release is handed to
// the host instead of being run by the clock, and runs only on Fire.
func TestEngineDefersReleases(t *testing.T) {
	s := &scenario.Scenario{
		Config: scenario.Config{Queues: 1, HandSize: 1, QueueLengthLimit: 5, ConcurrencyLimit: 1},
		Requests: []scenario.Request{
			{ID: "A", InitialSeats: 1, FinalSeats: 1, AdditionalLatency: time.Second, Duration: time.Second},
			{ID: "B", InitialSeats: 1, Duration: time.Second},
		},
	}
	h := &hostLog{}
	e := New()
	if err := e.Start(s, h); err != nil {
		t.Fatal(err)
	}
	if a := e.Arrive(0, 0); a != (scenario.Admission{Queue: 0}) {
		t.Errorf("Arrive(A) = %+v, want queue 0", a)
	}
	if a := e.Arrive(0, 1); a != (scenario.Admission{Queue: 0}) {
		t.Errorf("Arrive(B) = %+v, want queue 0", a)
	}
	e.Complete(time.Second, 0) // A lingers: B must not be dispatched yet
	e.Fire(2*time.Second, 0)   // the release dispatches B
	want := []string{"dispatched A", "schedule 2s", "dispatched B"}
	if strings.Join(h.calls, "; ") != strings.Join(want, "; ") {
		t.Errorf("host calls = %q, want %q", h.calls, want)
	}
}

// TestEngineRejectsFixStaleQueueRemoval checks that a scenario asking for
// fairqueue's stale-queue-removal fix, which upstream lacks, is refused
// with an error naming every config that sets it, instead of silently
// running without the fix.
func TestEngineRejectsFixStaleQueueRemoval(t *testing.T) {
	base := scenario.Config{Queues: 2, HandSize: 1, QueueLengthLimit: 5, ConcurrencyLimit: 1}
	fixed := base
	fixed.FixStaleQueueRemoval = true
	s := &scenario.Scenario{
		Config:           fixed,
		Requests:         []scenario.Request{{ID: "A", InitialSeats: 1, Duration: time.Second}},
		Reconfigurations: []scenario.Reconfiguration{{At: 1, Config: base}, {At: 2, Config: fixed}},
	}
	_, err := scenario.Run(s, New())
	for _, want := range []string{"config: fixStaleQueueRemoval", "reconfigurations[1].config: fixStaleQueueRemoval"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run with fixStaleQueueRemoval: error %v, want it to contain %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "reconfigurations[0]") {
		t.Errorf("Run: error %v names reconfigurations[0], which does not set the option", err)
	}
	if err := New().Reconfigure(0, fixed); err == nil {
		t.Error("Reconfigure with fixStaleQueueRemoval = nil error, want one")
	}
	s.Config = base
	s.Reconfigurations = s.Reconfigurations[:1]
	if _, err := scenario.Run(s, New()); err != nil {
		t.Errorf("Run without the option: %v", err)
	}
}
