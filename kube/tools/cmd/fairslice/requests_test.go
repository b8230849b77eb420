package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/flowschema"
)

// TestClassifyTrialWrongAnswer: a request naming a resource without
// "resourceRequest": true, and the same request as a path, are a node's
// resource request (system-node-high), not a non-resource request that
// falls to system-nodes. Before the fix both came back system-nodes/system.
func TestClassifyTrialWrongAnswer(t *testing.T) {
	stdin = strings.NewReader(`{"user":"system:node:n1","groups":["system:nodes","system:authenticated"],"verb":"get","resource":"nodes","name":"n1"}
{"user":"system:node:n1","groups":["system:nodes","system:authenticated"],"verb":"get","path":"/api/v1/nodes/n1"}
{"user":"system:node:n1","groups":["system:nodes","system:authenticated"],"verb":"get","path":"/api/v1/nodes/n1","resource":"nodes","name":"n1","resourceRequest":true}
`)
	code, stdout, stderr := invoke("classify", "-")
	line := `{"flowSchema": "system-node-high", "priorityLevel": "node-high", "distinguisher": "system:node:n1"}` + "\n"
	if want := strings.Repeat(line, 3); code != exitOK || stdout != want {
		t.Errorf("classify - = %d, %q (stderr %q), want 0, %q", code, stdout, stderr, want)
	}
	code, stdout, stderr = invoke("explain", "--user", "system:node:n1", "--groups", "system:nodes,system:authenticated", "--verb", "get", "--path", "/api/v1/nodes/n1")
	if code != exitOK || !strings.Contains(stdout, "matched: FlowSchema system-node-high") {
		t.Errorf("explain --path /api/v1/nodes/n1 = %d, %q (stderr %q), want system-node-high", code, stdout, stderr)
	}
}

func TestRequestSpec(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		spec    requestSpec
		want    flowschema.Request
		wantErr string
	}{
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "list", Path: "/apis/apps/v1/namespaces/ns/deployments"}},
			want: flowschema.Request{User: "u", Verb: "list", APIGroup: "apps", Resource: "deployments", Namespace: "ns",
				Path: "/apis/apps/v1/namespaces/ns/deployments", ResourceRequest: true}},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "watch", Path: "/api/v1/pods"}},
			want: flowschema.Request{User: "u", Verb: "watch", Resource: "pods", Path: "/api/v1/pods", ResourceRequest: true}},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "patch", Path: "/api/v1/nodes/n1/status"}},
			want: flowschema.Request{User: "u", Verb: "patch", Resource: "nodes", Subresource: "status", Name: "n1", Path: "/api/v1/nodes/n1/status", ResourceRequest: true}},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "get", Path: "/healthz/etcd"}},
			want: flowschema.Request{User: "u", Verb: "get", Path: "/healthz/etcd"}},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "get", Resource: "pods", Namespace: "ns"}},
			want: flowschema.Request{User: "u", Verb: "get", Resource: "pods", Namespace: "ns", ResourceRequest: true}},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "get", Path: "/api/v1/pods"}}, wantErr: `verb: "get" contradicts path "/api/v1/pods", where kube-apiserver sees "list"`},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "get", Path: "/api/v1/nodes/n1", Resource: "pods"}}, wantErr: `resource: "pods" contradicts path`},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "get", Path: "/api/v1/nodes/n1"}, ResourceRequest: &no}, wantErr: `resourceRequest: false contradicts path "/api/v1/nodes/n1", which is a resource request`},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "get", Path: "/healthz"}, ResourceRequest: &yes}, wantErr: "which is a non-resource request"},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "get", Resource: "pods"}, ResourceRequest: &no}, wantErr: `resourceRequest: false contradicts resource "pods"`},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "get"}, ResourceRequest: &yes}, wantErr: "resource: missing"},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "get"}}, wantErr: "path: missing"},
		{spec: requestSpec{Request: flowschema.Request{Verb: "get", Path: "/"}}, wantErr: "user: missing"},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Path: "/"}}, wantErr: "verb: missing"},
		{spec: requestSpec{Request: flowschema.Request{User: "u", Verb: "get", Path: "healthz"}}, wantErr: "not an absolute URL path"},
	}
	for _, tt := range tests {
		got, err := tt.spec.request()
		js, _ := json.Marshal(tt.spec)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("request(%s) error = %v, want %q", js, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("request(%s) error = %v", js, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("request(%s) mismatch (-want +got):\n%s", js, diff)
		}
	}
}

func TestClassifyInputErrors(t *testing.T) {
	for _, tt := range []struct{ stdin, want string }{
		{"", "standard input: no requests (the input is empty)"},
		{`{"user": "u", "verb": "get", "resource": "pods", "resourceRequest": false}` + "\n", `standard input: line 1: resourceRequest: false contradicts resource "pods"`},
		{`{"user": "u", "verb": "get", "colour": 1}` + "\n", `standard input: line 1: json: unknown field "colour"`},
	} {
		stdin = strings.NewReader(tt.stdin)
		code, stdout, stderr := invoke("classify", "-")
		if code != exitFailure || stdout != "" || !strings.Contains(stderr, tt.want) {
			t.Errorf("classify - <<< %q = %d, %q, stderr %q; want 1 and %q", tt.stdin, code, stdout, stderr, tt.want)
		}
	}
}

func TestExplainPrefixMatch(t *testing.T) {
	code, stdout, stderr := invoke("explain", "--user", "bob", "--groups", "system:authenticated", "--verb", "get", "--path", "/healthz/etcd")
	if code != exitOK || !strings.Contains(stdout, `path /healthz/etcd matched nonResourceURLs entry "/healthz" by its prefix "/healthz/"`) {
		t.Errorf("explain --path /healthz/etcd = %d, %q (stderr %q); want the prefix match named", code, stdout, stderr)
	}
	code, stdout, _ = invoke("explain", "--user", "bob", "--groups", "system:authenticated", "--verb", "get", "--path", "/healthz", "-o", "json")
	var res explainResult
	if err := json.Unmarshal([]byte(stdout), &res); code != exitOK || err != nil || res.FlowSchema != "probes" || res.PrefixMatch != "" {
		t.Errorf("explain --path /healthz -o json = %d, %+v, %v; want probes matched exactly", code, res, err)
	}
}
