package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// auditLines are events as kube-apiserver's log backend writes them at
// Metadata level (fields trimmed): a kubelet's get of its node in two
// stages, an impersonated list, and a health probe.
const auditLines = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"RequestReceived","requestURI":"/api/v1/nodes/n1","verb":"get","user":{"username":"system:node:n1","groups":["system:nodes","system:authenticated"]},"objectRef":{"resource":"nodes","name":"n1","apiVersion":"v1"},"requestReceivedTimestamp":"2026-01-01T00:00:00.000000Z","stageTimestamp":"2026-01-01T00:00:00.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete","requestURI":"/api/v1/nodes/n1","verb":"get","user":{"username":"system:node:n1","groups":["system:nodes","system:authenticated"]},"objectRef":{"resource":"nodes","name":"n1","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:00.000000Z","stageTimestamp":"2026-01-01T00:00:00.004000Z"}
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
	if !strings.Contains(stderr, "standard input: line 6: not an audit.k8s.io/v1 Event") {
		t.Errorf("stderr %q does not report the skipped line", stderr)
	}
	reqs, _, _, err := readAuditLog(writeTemp(t, "audit.log", auditLines))
	if err != nil || len(reqs) != 4 || reqs[0].Duration.Milliseconds() != 4 || !reqs[0].Complete || reqs[1].Request.User != "alice" {
		t.Errorf("readAuditLog = %+v, %v; want 4 requests, the first taking 4ms, the second alice's", reqs, err)
	}
}
