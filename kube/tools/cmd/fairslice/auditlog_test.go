package main

import (
	"path/filepath"

	"github.com/fairslice/fairslice/kube/tools/pictures"

	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// auditLines are events as kube-apiserver's log backend writes them at
// Metadata level (fields trimmed): a kubelet's get of its node in two
// stages, an impersonated list in two stages (only the second names the
// impersonated user, as kube-apiserver logs them), and a health probe.
const auditLines = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"RequestReceived","requestURI":"/api/v1/nodes/n1","verb":"get","user":{"username":"system:node:n1","groups":["system:nodes","system:authenticated"]},"objectRef":{"resource":"nodes","name":"n1","apiVersion":"v1"},"requestReceivedTimestamp":"2026-01-01T00:00:00.000000Z","stageTimestamp":"2026-01-01T00:00:00.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete","requestURI":"/api/v1/nodes/n1","verb":"get","user":{"username":"system:node:n1","groups":["system:nodes","system:authenticated"]},"objectRef":{"resource":"nodes","name":"n1","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:00.000000Z","stageTimestamp":"2026-01-01T00:00:00.004000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a2","stage":"RequestReceived","requestURI":"/api/v1/namespaces/default/pods?limit=500","verb":"list","user":{"username":"admin","groups":["system:masters"]},"requestReceivedTimestamp":"2026-01-01T00:00:00.001000Z","stageTimestamp":"2026-01-01T00:00:00.001000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a2","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods?limit=500","verb":"list","user":{"username":"admin","groups":["system:masters"]},"impersonatedUser":{"username":"alice","groups":["system:authenticated"]},"requestReceivedTimestamp":"2026-01-01T00:00:00.001000Z","stageTimestamp":"2026-01-01T00:00:00.011000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a3","stage":"ResponseComplete","requestURI":"/api/v1/nodes/n1","verb":"get","user":{"username":"system:node:n1","groups":["system:nodes","system:authenticated"]},"requestReceivedTimestamp":"2026-01-01T00:00:01Z","stageTimestamp":"2026-01-01T00:00:01.002Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a4","stage":"ResponseComplete","requestURI":"/livez","verb":"get","user":{"username":"system:anonymous","groups":["system:unauthenticated"]},"requestReceivedTimestamp":"2026-01-01T00:00:02Z","stageTimestamp":"2026-01-01T00:00:02.001Z"}
not json
`

func TestClassifyAuditLog(t *testing.T) {
	stdin = strings.NewReader(auditLines)
	code, stdout, stderr := invoke("classify", "--audit-log", "-", "-o", "json")
	if code != exitOK {
		t.Fatalf("classify --audit-log = %d; stderr %s", code, stderr)
	}
	var got auditClassification
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("classify --audit-log -o json: %v\n%s", err, stdout)
	}
	want := auditClassification{Requests: 4, Skipped: 1, Flows: []flowCount{
		{classification{"system-node-high", "node-high", "system:node:n1"}, 2},
		{classification{"global-default", "global-default", "alice"}, 1},
		{classification{"probes", "exempt", ""}, 1},
	}}
	if got.Requests != want.Requests || got.Skipped != want.Skipped || len(got.Flows) != len(want.Flows) {
		t.Fatalf("classify --audit-log = %+v, want %+v", got, want)
	}
	for i := range want.Flows {
		if got.Flows[i] != want.Flows[i] {
			t.Errorf("flows[%d] = %+v, want %+v", i, got.Flows[i], want.Flows[i])
		}
	}
	if !strings.Contains(stderr, "standard input: line 7: not an audit.k8s.io/v1 Event") {
		t.Errorf("stderr %q does not report the skipped line", stderr)
	}
	reqs, _, _, err := readAuditLog(writeTemp(t, "audit.log", auditLines))
	if err != nil || len(reqs) != 4 || reqs[0].Duration.Milliseconds() != 4 || !reqs[0].Complete || reqs[1].Request.User != "alice" {
		t.Errorf("readAuditLog = %+v, %v; want 4 requests, the first taking 4ms, the second alice's", reqs, err)
	}
}

// TestSimulateAuditLogNoisyFlow: 300 one-second lists from one user at the
// same instant overflow global-default's queues at a server concurrency of
// 20 (they time out after 15 s in the queues); a quiet user's request, in the
// same level but another
// flow, waits behind the seats in use but is not rejected.
func TestSimulateAuditLogNoisyFlow(t *testing.T) {
	var b strings.Builder
	line := func(id, user, at, end string) {
		b.WriteString(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + id + `","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps","verb":"list","user":{"username":"` + user + `","groups":["system:authenticated"]},"requestReceivedTimestamp":"` + at + `","stageTimestamp":"` + end + `"}` + "\n")
	}
	for i := range 300 {
		line(fmt.Sprint("n", i), "noisy", "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z")
	}
	line("q", "quiet", "2026-01-01T00:00:00.5Z", "2026-01-01T00:00:00.6Z")
	stdin = strings.NewReader(b.String())
	code, stdout, stderr := invoke("simulate", "--audit-log", "-", "--server-concurrency", "20", "-o", "json")
	if code != exitOK {
		t.Fatalf("simulate --audit-log = %d; stderr %s", code, stderr)
	}
	var got replayResult
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("simulate --audit-log -o json: %v\n%s", err, stdout)
	}
	if got.Requests != 301 || len(got.Levels) != 1 || got.Levels[0].PriorityLevel != "global-default" || len(got.Flows) != 2 {
		t.Fatalf("simulate --audit-log = %s; want 301 requests in global-default, two flows", stdout)
	}
	noisy, quiet := got.Flows[0], got.Flows[1]
	if noisy.Distinguisher != "noisy" || noisy.Rejected+noisy.TimedOut == 0 || noisy.Dispatched == 0 {
		t.Errorf("top flow = %+v; want noisy, partly rejected or timed out", noisy)
	}
	if quiet.Distinguisher != "quiet" || quiet.Dispatched != 1 || quiet.Rejected+quiet.TimedOut != 0 {
		t.Errorf("second flow = %+v; want quiet, dispatched", quiet)
	}
	if l := got.Levels[0]; l.Requests != 301 || l.Rejected+l.TimedOut != noisy.Rejected+noisy.TimedOut || l.ConcurrencyLimit == nil {
		t.Errorf("level = %+v; want the sum of the flows and a concurrency limit", l)
	}
	code, stdout, _ = invoke("simulate", "--audit-log", writeTemp(t, "a.log", b.String()), "--server-concurrency", "20")
	if code != exitOK || !strings.Contains(stdout, "301 requests replayed") || !strings.Contains(stdout, "global-default/noisy") {
		t.Errorf("simulate --audit-log (text) = %d:\n%s", code, stdout)
	}
	// The picture of the replay is global-default's run: its flows'
	// dispatches and rejections are the counts the JSON reports.
	svg := filepath.Join(t.TempDir(), "replay.svg")
	stdin = strings.NewReader(b.String())
	if code, _, stderr := invoke("simulate", "--audit-log", "-", "--server-concurrency", "20", "--svg", svg); code != exitOK {
		t.Fatalf("simulate --audit-log --svg = %d; stderr %s", code, stderr)
	}
	var data pictures.SimulationData
	readPicture(t, svg, &data)
	if len(data.Runs) != 1 || len(data.Runs[0].Flows) != 2 {
		t.Fatalf("picture data = %d runs; want one run of two flows", len(data.Runs))
	}
	var dispatched, ended int
	for _, f := range data.Runs[0].Flows {
		dispatched += len(f.Dispatches)
		ended += len(f.Rejections)
	}
	if l := got.Levels[0]; dispatched != l.Dispatched || ended != l.Rejected+l.TimedOut {
		t.Errorf("picture: %d dispatched, %d rejected or timed out; the JSON says %d and %d", dispatched, ended, l.Dispatched, l.Rejected+l.TimedOut)
	}
}
