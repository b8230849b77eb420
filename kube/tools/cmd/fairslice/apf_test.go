package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The classification of testdata/apf-requests.jsonl under
// testdata/apf-config.yaml: probes' level is missing from the file, so
// probes is dangling (the mandatory exempt level is added only after
// references are checked); the last request matches nothing and falls
// back to catch-all.
const wantClassified = `{"flowSchema": "team-a", "priorityLevel": "team", "distinguisher": "team-a"}
{"flowSchema": "catch-all", "priorityLevel": "catch-all", "distinguisher": ""}
{"flowSchema": "catch-all", "priorityLevel": "catch-all", "distinguisher": ""}
{"flowSchema": "exempt", "priorityLevel": "exempt", "distinguisher": ""}
{"flowSchema": "catch-all", "priorityLevel": "catch-all", "distinguisher": ""}
`

func TestClassifyCommand(t *testing.T) {
	for _, args := range [][]string{
		{"classify", "--config", "testdata/apf-config.yaml", "testdata/apf-requests.jsonl"},
		{"classify", "testdata/apf-requests.jsonl", "--config", "testdata/apf-config.yaml", "--upstream"},
	} {
		if upstreamUnavailable(args) {
			continue
		}
		code, stdout, stderr := invoke(args...)
		if code != exitOK {
			t.Fatalf("run(%q) = %d; stderr:\n%s", args, code, stderr)
		}
		if diff := cmp.Diff(wantClassified, stdout); diff != "" {
			t.Errorf("run(%q) output mismatch (-want +got):\n%s", args, diff)
		}
	}
}

func TestClassifyDefaultConfig(t *testing.T) {
	old := stdin
	defer func() { stdin = old }()
	stdin = strings.NewReader(`{"user": "system:node:n1", "groups": ["system:nodes"], "verb": "patch", "resource": "nodes", "subresource": "status", "resourceRequest": true}`)
	code, stdout, stderr := invoke("classify", "-")
	want := `{"flowSchema": "system-node-high", "priorityLevel": "node-high", "distinguisher": "system:node:n1"}` + "\n"
	if code != exitOK || stdout != want {
		t.Errorf("classify - = %d, %q (stderr %q), want 0, %q", code, stdout, stderr, want)
	}
}

func TestAPFCommandErrors(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"classify"}, exitUsage, "expected one requests file, got 0"},
		{[]string{"classify", "--bogus", "x"}, exitUsage, "flag provided but not defined"},
		{[]string{"classify", "nope.jsonl"}, exitFailure, "no such file"},
		{[]string{"classify", "--config", "testdata/apf-requests.jsonl", "testdata/apf-requests.jsonl"}, exitFailure, "testdata/apf-requests.jsonl: document 1: kind: missing"},
		{[]string{"classify", "testdata/apf-config.yaml"}, exitFailure, "line 1"},
		{[]string{"explain", "--user", "a"}, exitUsage, "--verb is required"},
		{[]string{"explain", "--verb", "get"}, exitUsage, "--user is required"},
		{[]string{"explain", "--user", "a", "--verb", "get"}, exitUsage, "give --path or --resource"},
		{[]string{"validate"}, exitUsage, "expected a file"},
		{[]string{"lint"}, exitUsage, "expected a file"},
		{[]string{"lint", "--config", "x"}, exitUsage, "flag provided but not defined"},
		{[]string{"validate", "--kubeconfig", "k", "x.yaml"}, exitUsage, "not both"},
		{[]string{"limits", "--server-concurrency", "1", "-o", "xml"}, exitUsage, `"xml" is not text, json or yaml`},
		{[]string{"limits"}, exitUsage, "--server-concurrency must be a positive number"},
		{[]string{"limits", "--server-concurrency", "600", "--config", "nope.yaml"}, exitFailure, "no such file"},
		{[]string{"classify", "--help"}, exitOK, "Usage: fairslice classify"},
		{[]string{"limits", "-h"}, exitOK, "Usage: fairslice limits"},
	}
	for _, tt := range tests {
		code, _, stderr := invoke(tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.inStderr) {
			t.Errorf("run(%q) = %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.inStderr)
		}
	}
}

func TestExplainCommand(t *testing.T) {
	code, stdout, stderr := invoke("explain", "--config", "testdata/apf-config.yaml", "--user", "alice", "--groups", "team-a,system:authenticated",
		"--verb", "get", "--resource", "pods", "--subresource", "log", "--namespace", "team-b")
	if code != exitOK {
		t.Fatalf("explain = %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		`request: user "alice" groups ["team-a" "system:authenticated"] verb "get" apiGroup "" resource "pods/log" namespace "team-b"`,
		"matched: FlowSchema catch-all (precedence 10000) via rules[0], subjects[1] (Group system:authenticated), resourceRules[0]",
		`rules[0]: subject matches but resourceRules[0] namespace "team-b" not in ["team-a"]`,
		`skipped: probes references missing priority level "exempt"`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("explain output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestValidateAndLintCommands(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad.yaml"
	if err := os.WriteFile(bad, []byte(`kind: FlowSchema
metadata: {name: x}
spec:
  matchingPrecedence: 1
  priorityLevelConfiguration: {name: ""}
  rules: [{subjects: []}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := invoke("validate", bad)
	wantLines := []string{
		`flowschema: FlowSchema "x": spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1`,
		`flowschema: FlowSchema "x": spec.priorityLevelConfiguration.name: Required value: must reference a priority level`,
		`flowschema: FlowSchema "x": spec.rules[0].subjects: Required value: subjects must contain at least one value`,
		`flowschema: FlowSchema "x": spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty`,
	}
	if diff := cmp.Diff(strings.Join(wantLines, "\n")+"\n", stdout); code != exitFailure || diff != "" {
		t.Errorf("validate = %d, output mismatch (-want +got):\n%s", code, diff)
	}
	if code, stdout, _ := invoke("validate", "testdata/apf-config.yaml"); code != exitOK || !strings.HasPrefix(stdout, "valid: 2 FlowSchemas, 1 PriorityLevelConfigurations") {
		t.Errorf("validate apf-config.yaml = %d, %q", code, stdout)
	}
	code, stdout, _ = invoke("lint", "testdata/apf-config.yaml")
	want := `dangling FlowSchema probes: references priority level "exempt", which the configuration lacks; the mandatory level is added only after references are checked; the FlowSchema is skipped` + "\n"
	if code != exitFailure || stdout != want {
		t.Errorf("lint = %d, %q; want 1, %q", code, stdout, want)
	}
}

func TestLimitsCommand(t *testing.T) {
	code, stdout, stderr := invoke("limits", "--server-concurrency", "600")
	if code != exitOK {
		t.Fatalf("limits = %d; stderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 10 {
		t.Fatalf("limits printed %d lines, want a header, 8 levels and a total:\n%s", len(lines), stdout)
	}
	for _, want := range [][]string{
		{"LEVEL", "TYPE", "SHARES", "NOMINAL", "LENDABLE", "BORROW", "MIN", "MAX", "SEATS", "CURRENT"},
		{"workload-low", "queue", "100", "245", "221", "600", "24", "845", "37"},
		{"catch-all", "reject", "5", "13", "0", "600", "13", "613", "-"},
	} {
		found := false
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) >= len(want) && cmp.Equal(f[:len(want)], want) {
				found = true
			}
		}
		if !found {
			t.Errorf("limits output lacks a row starting %q:\n%s", want, stdout)
		}
	}
}
