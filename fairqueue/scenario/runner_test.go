package scenario

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// fifoEngine is a tiny engine for testing the runner: one FIFO queue
// (index 0) in front of limit slots, one slot per request, held through the
// additional latency. It logs every call.
type fifoEngine struct {
	s       *Scenario
	h       Host
	limit   int
	busy    int
	waiting []int
	log     []string
}

func (e *fifoEngine) Start(s *Scenario, h Host) error {
	e.s, e.h, e.limit = s, h, s.Config.ConcurrencyLimit
	return nil
}

func (e *fifoEngine) note(now time.Duration, format string, args ...any) {
	e.log = append(e.log, fmt.Sprintf("%v ", now)+fmt.Sprintf(format, args...))
}

func (e *fifoEngine) dispatch() {
	for len(e.waiting) > 0 && e.busy < e.limit {
		i := e.waiting[0]
		e.waiting = e.waiting[1:]
		e.busy++
		e.h.Dispatched(i)
	}
}

func (e *fifoEngine) Arrive(now time.Duration, i int) Admission {
	e.note(now, "arrive %s", e.s.Requests[i].ID)
	if len(e.waiting) >= e.s.Config.QueueLengthLimit && e.busy >= e.limit {
		return Admission{Queue: -1, Rejected: true, Reason: ReasonQueueFull}
	}
	e.waiting = append(e.waiting, i)
	e.dispatch()
	return Admission{Queue: 0}
}

func (e *fifoEngine) Complete(now time.Duration, i int) {
	e.note(now, "complete %s", e.s.Requests[i].ID)
	if lat := e.s.Requests[i].AdditionalLatency; lat > 0 {
		e.h.Schedule(now+lat, i)
		return
	}
	e.busy--
	e.dispatch()
}

func (e *fifoEngine) Expire(now time.Duration, i int) bool {
	e.note(now, "expire %s", e.s.Requests[i].ID)
	j := slices.Index(e.waiting, i)
	if j < 0 {
		return false
	}
	e.waiting = slices.Delete(e.waiting, j, j+1)
	return true
}

func (e *fifoEngine) Fire(now time.Duration, token int) {
	e.note(now, "release %s", e.s.Requests[token].ID)
	e.busy--
	e.dispatch()
}

func (e *fifoEngine) Reconfigure(now time.Duration, c Config) error {
	e.note(now, "reconfigure limit %d", c.ConcurrencyLimit)
	e.limit = c.ConcurrencyLimit
	e.dispatch()
	return nil
}

func mustParse(t *testing.T, text string) *Scenario {
	t.Helper()
	s, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func resultsText(res []Result) string {
	var b strings.Builder
	_ = WriteResults(&b, res)
	return b.String()
}

func TestRunSameInstantOrder(t *testing.T) {
	// At 1s: first A's completion (scheduled at its dispatch at 0s), then
	// F's seat release (scheduled at F's completion at 500ms), then the
	// expiries in file order (X's and Y's do nothing: those requests were
	// dispatched by the completion and the release), then the
	// reconfiguration, then the arrivals in file order.
	s := mustParse(t, `{"config": {"queues": 1, "handSize": 1, "queueLengthLimit": 10, "concurrencyLimit": 2},
	 "requests": [
	  {"id": "N2", "arrival": "1s", "hash": 1, "duration": "1s"},
	  {"id": "A", "arrival": "0s", "hash": 1, "duration": "1s"},
	  {"id": "F", "arrival": "0s", "hash": 1, "duration": "500ms", "finalSeats": 1, "additionalLatency": "500ms"},
	  {"id": "X", "arrival": "0s", "hash": 1, "duration": "1s", "waitLimit": "1s"},
	  {"id": "Y", "arrival": "500ms", "hash": 1, "duration": "1s", "waitLimit": "500ms"},
	  {"id": "Z", "arrival": "500ms", "hash": 1, "duration": "1s", "waitLimit": "500ms"},
	  {"id": "N1", "arrival": "1s", "hash": 1, "duration": "1s"}],
	 "reconfigurations": [{"at": "1s", "config": {"queues": 1, "handSize": 1, "queueLengthLimit": 10, "concurrencyLimit": 3}}]}`)
	e := &fifoEngine{}
	res, err := Run(s, e)
	if err != nil {
		t.Fatal(err)
	}
	wantLog := []string{
		"0s arrive A", "0s arrive F", "0s arrive X",
		"500ms complete F",
		"500ms arrive Y", "500ms arrive Z",
		"1s complete A",                // scheduled at 0s: dispatches X
		"1s release F",                 // scheduled at 500ms: dispatches Y
		"1s expire Z",                  // X's and Y's expiries do nothing
		"1s reconfigure limit 3",       // dispatches nothing: N1, N2 not here yet
		"1s arrive N2", "1s arrive N1", // file order
	}
	if got := e.log[:len(wantLog)]; !slices.Equal(got, wantLog) {
		t.Errorf("Run log =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantLog, "\n"))
	}
	want := `{"id":"N2","outcome":"dispatched","reason":"","queue":0,"dispatchedAt":"1s"}
{"id":"A","outcome":"dispatched","reason":"","queue":0,"dispatchedAt":"0s"}
{"id":"F","outcome":"dispatched","reason":"","queue":0,"dispatchedAt":"0s"}
{"id":"X","outcome":"dispatched","reason":"","queue":0,"dispatchedAt":"1s"}
{"id":"Y","outcome":"dispatched","reason":"","queue":0,"dispatchedAt":"1s"}
{"id":"Z","outcome":"rejected","reason":"time-out","queue":0,"dispatchedAt":""}
{"id":"N1","outcome":"dispatched","reason":"","queue":0,"dispatchedAt":"2s"}
`
	if got := resultsText(res); got != want {
		t.Errorf("Run results =\n%swant\n%s", got, want)
	}
	var order []string
	for k := range 6 {
		for _, r := range res {
			if r.Order == k {
				order = append(order, r.ID)
			}
		}
	}
	if want := []string{"A", "F", "X", "Y", "N2", "N1"}; !slices.Equal(order, want) {
		t.Errorf("Run dispatch order = %q, want %q", order, want)
	}
	checkResults(t, s, res)
}

func TestRunZeroDurationCompletesBeforeLaterArrivals(t *testing.T) {
	// B's completion, scheduled at 0s for 0s, belongs to the completions
	// class, so it runs before C's arrival at the same instant.
	s := mustParse(t, `{"config": {"queues": 1, "handSize": 1, "queueLengthLimit": 0, "concurrencyLimit": 1},
	 "requests": [
	  {"id": "B", "arrival": "0s", "hash": 1, "duration": "0s"},
	  {"id": "C", "arrival": "0s", "hash": 1, "duration": "0s"}]}`)
	e := &fifoEngine{}
	res, err := Run(s, e)
	if err != nil {
		t.Fatal(err)
	}
	wantLog := []string{"0s arrive B", "0s complete B", "0s arrive C", "0s complete C"}
	if !slices.Equal(e.log, wantLog) {
		t.Errorf("Run log = %q, want %q", e.log, wantLog)
	}
	for _, r := range res {
		if r.Outcome != OutcomeDispatched {
			t.Errorf("Run: %s outcome %q, want dispatched", r.ID, r.Outcome)
		}
	}
}

func TestRunRejectionAndWaiting(t *testing.T) {
	// A limit of 0 never dispatches: A waits forever, B is rejected.
	s := mustParse(t, `{"config": {"queues": 1, "handSize": 1, "queueLengthLimit": 1, "concurrencyLimit": 0},
	 "requests": [
	  {"id": "A", "arrival": "0s", "hash": 1, "duration": "1s"},
	  {"id": "B", "arrival": "1s", "hash": 1, "duration": "1s"}]}`)
	res, err := Run(s, &fifoEngine{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"A","outcome":"waiting","reason":"","queue":0,"dispatchedAt":""}
{"id":"B","outcome":"rejected","reason":"queue-full","queue":-1,"dispatchedAt":""}
`
	if got := resultsText(res); got != want {
		t.Errorf("Run results =\n%swant\n%s", got, want)
	}
}

// badEngine breaks the Engine contract in the way its field says.
type badEngine struct {
	fifoEngine
	twice, past, noExpire bool
}

func (e *badEngine) Arrive(now time.Duration, i int) Admission {
	a := e.fifoEngine.Arrive(now, i)
	if e.twice && i == 0 {
		e.h.Dispatched(0)
	}
	if e.past {
		e.h.Schedule(now-1, 0)
	}
	return a
}

func (e *badEngine) Expire(now time.Duration, i int) bool {
	e.fifoEngine.Expire(now, i)
	return !e.noExpire
}

func TestRunContractViolations(t *testing.T) {
	s := mustParse(t, `{"config": {"queues": 1, "handSize": 1, "queueLengthLimit": 5, "concurrencyLimit": 1},
	 "requests": [
	  {"id": "A", "arrival": "1s", "hash": 1, "duration": "1s"},
	  {"id": "B", "arrival": "1s", "hash": 1, "duration": "1s", "waitLimit": "100ms"}]}`)
	for _, tt := range []struct {
		e    *badEngine
		want string
	}{
		{&badEngine{twice: true}, `dispatch of request "A", which is not waiting`},
		{&badEngine{past: true}, "event scheduled in the past"},
		{&badEngine{noExpire: true}, `engine did not expire waiting request "B"`},
	} {
		_, err := Run(s, tt.e)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Run(%+v) error = %v, want one containing %q", tt.e, err, tt.want)
		}
	}
}

func TestAddSat(t *testing.T) {
	if got := addSat(1<<62, 1<<62); got != 1<<63-1 {
		t.Errorf("addSat(1<<62, 1<<62) = %v, want MaxInt64", got)
	}
	if got := addSat(time.Second, time.Second); got != 2*time.Second {
		t.Errorf("addSat(1s, 1s) = %v, want 2s", got)
	}
}
