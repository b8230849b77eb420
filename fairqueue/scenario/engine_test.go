package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineGolden replays testdata/*.json through fairqueue and compares
// with testdata/*.golden. The golden files were produced by upstream's
// QueueSet (kube/tools/cmd/fairslice: fairslice simulate --upstream) and checked
// by hand, except stale-queue-removal.golden: upstream panics on that
// scenario, and fairqueue leaves W waiting in the queue that upstream's
// stale-index removal detached.
func TestEngineGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no testdata/*.json")
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(strings.TrimSuffix(name, ".json") + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		s := mustParse(t, string(data))
		res, err := Run(s, NewEngine())
		if err != nil {
			t.Fatalf("Run(%s) error %v", name, err)
		}
		if got := resultsText(res); got != string(want) {
			t.Errorf("Run(%s) =\n%swant\n%s", name, got, want)
		}
	}
}

// TestEngineFixStaleQueueRemoval replays testdata/stale-queue-removal.json
// with fixStaleQueueRemoval set in both of its configurations: L's release
// at 3s then removes no queue, and W, stranded without the fix, is
// dispatched as the seats free.
func TestEngineFixStaleQueueRemoval(t *testing.T) {
	data, err := os.ReadFile("testdata/stale-queue-removal.json")
	if err != nil {
		t.Fatal(err)
	}
	const limit = `"concurrencyLimit": 2}`
	text := string(data)
	if strings.Count(text, limit) != 2 {
		t.Fatalf("testdata/stale-queue-removal.json changed: want two configs ending in %s", limit)
	}
	s := mustParse(t, strings.ReplaceAll(text, limit, `"concurrencyLimit": 2, "fixStaleQueueRemoval": true}`))
	res, err := Run(s, NewEngine())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"L","outcome":"dispatched","reason":"","queue":0,"dispatchedAt":"0s"}
{"id":"M","outcome":"dispatched","reason":"","queue":0,"dispatchedAt":"0s"}
{"id":"W","outcome":"dispatched","reason":"","queue":1,"dispatchedAt":"3s"}
`
	if got := resultsText(res); got != want {
		t.Errorf("Run(stale-queue-removal with the fix) =\n%swant\n%s", got, want)
	}
}

func TestEngineConfigError(t *testing.T) {
	s := &Scenario{Config: Config{Queues: 4, HandSize: 5, ConcurrencyLimit: 1}}
	if _, err := Run(s, NewEngine()); err == nil || !strings.Contains(err.Error(), "HandSize=5") {
		t.Errorf("Run with hand 5 of 4 queues: error %v, want fairqueue's config error", err)
	}
	s = mustParse(t, `{"config": {"queues": 4, "handSize": 2, "queueLengthLimit": 1, "concurrencyLimit": 1}, "requests": []}`)
	s.Reconfigurations = []Reconfiguration{{At: 1, Config: Config{Queues: 4, HandSize: 5, ConcurrencyLimit: 1}}}
	if _, err := Run(s, NewEngine()); err == nil || !strings.Contains(err.Error(), "reconfigurations[0]") {
		t.Errorf("Run with a bad reconfiguration: error %v, want one naming reconfigurations[0]", err)
	}
}

// TestEngineEpochAdvance checks that testdata/epoch-advance.json really
// drives the virtual clock through an epoch advance (R passing 3/4 of its
// range), so that its golden output covers that path.
func TestEngineEpochAdvance(t *testing.T) {
	data, err := os.ReadFile("testdata/epoch-advance.json")
	if err != nil {
		t.Fatal(err)
	}
	e := &coreEngine{}
	if _, err := Run(mustParse(t, string(data)), e); err != nil {
		t.Fatal(err)
	}
	if n := e.qs.Counts().EpochAdvances; n != 1 {
		t.Errorf("epoch-advance.json: EpochAdvances = %d, want 1", n)
	}
}

// TestEngineOptions: the two options other than fixStaleQueueRemoval reach
// the queue set and change what upstream does.
func TestEngineOptions(t *testing.T) {
	run := func(config string) []Result {
		t.Helper()
		s := mustParse(t, `{"config": `+config+`, "requests": [
		  {"id": "a", "arrival": "0s", "hash": 1, "finalSeats": 4, "additionalLatency": "1s", "duration": "1s"},
		  {"id": "b", "arrival": "2500ms", "hash": 1, "duration": "1s"}]}`)
		res, err := Run(s, NewEngine())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// Upstream admits into a zero-limit set when nothing executes.
	if got := run(`{"queues": 0, "concurrencyLimit": 0}`)[0].Outcome; got != OutcomeDispatched {
		t.Errorf("limit 0: a = %v, want dispatched (upstream's quirk)", got)
	}
	if got := run(`{"queues": 0, "concurrencyLimit": 0, "fixZeroLimitAdmission": true}`)[0]; got.Outcome != OutcomeRejected || got.Reason != ReasonConcurrencyLimit {
		t.Errorf("limit 0 with fixZeroLimitAdmission: a = %+v, want rejected for concurrency-limit", got)
	}
	// a, wider than the limit of 2, runs alone and holds its 4 final seats
	// from 1s to 2s, so b fits at 2.5s; clamped to 2 seats, a holds them
	// twice as long, until 3s, and b is turned away.
	if got := run(`{"queues": 0, "concurrencyLimit": 2}`)[1]; got.Outcome != OutcomeDispatched {
		t.Errorf("without the clamp: b = %+v, want dispatched", got)
	}
	if got := run(`{"queues": 0, "concurrencyLimit": 2, "clampFinalSeatsWithoutQueues": true}`)[1]; got.Outcome != OutcomeRejected || got.Reason != ReasonConcurrencyLimit {
		t.Errorf("with the clamp: b = %+v, want rejected for concurrency-limit", got)
	}
}
