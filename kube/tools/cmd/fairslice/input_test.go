package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// A FlowSchemaList as the API server returns it: items carry no kind.
const typedList = `{"kind": "FlowSchemaList", "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "metadata": {"resourceVersion": "1"},
 "items": [{"metadata": {"name": "team-a", "managedFields": [{"manager": "kubectl"}]},
  "spec": {"priorityLevelConfiguration": {"name": "workload-low"}, "matchingPrecedence": 500,
   "rules": [{"subjects": [{"kind": "Group", "group": {"name": "team-a"}}],
              "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]}]},
  "status": {"conditions": [{"type": "Dangling", "status": "False"}]}}]}
{"kind": "PriorityLevelConfigurationList", "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "items": [
 {"metadata": {"name": "workload-low"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 100,
  "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}}]}
{"kind": "Service", "apiVersion": "v1", "metadata": {"name": "web"}}
`

func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTypedListsAndNoise: typed lists whose items lack kind (as the API
// server and kubectl print them) are read; the Service is reported on
// stderr and skipped. Before, this failed with "items[0]: missing kind".
func TestTypedListsAndNoise(t *testing.T) {
	file := writeTemp(t, "dump.json", typedList)
	code, stdout, stderr := invoke("validate", file)
	if code != exitOK || !strings.HasPrefix(stdout, "valid: 1 FlowSchemas, 1 PriorityLevelConfigurations") ||
		!strings.Contains(stderr, `ignoring `+file+`: document 3 (Service "web"): validate uses only FlowSchema, PriorityLevelConfiguration`) {
		t.Errorf("validate %s = %d, %q, stderr %q", file, code, stdout, stderr)
	}
	stdin = strings.NewReader(`{"user": "alice", "groups": ["team-a"], "verb": "list", "path": "/api/v1/namespaces/x/pods"}`)
	code, stdout, stderr = invoke("classify", "--config", file, "-")
	if want := `{"flowSchema": "team-a", "priorityLevel": "workload-low", "distinguisher": ""}` + "\n"; code != exitOK || stdout != want {
		t.Errorf("classify --config %s = %d, %q (stderr %q), want %q", file, code, stdout, stderr, want)
	}
}

func TestEmptyInputIsAnError(t *testing.T) {
	empty := writeTemp(t, "empty.yaml", "# nothing\n---\n")
	for _, args := range [][]string{
		{"validate", empty}, {"lint", empty}, {"limits", "--server-concurrency", "10", "--config", empty},
		{"explain", "--config", empty, "--user", "u", "--verb", "get", "--path", "/"},
	} {
		code, _, stderr := invoke(args...)
		if code != exitFailure || !strings.Contains(stderr, "empty.yaml: no objects (the input is empty)") {
			t.Errorf("fairslice %q = %d, stderr %q; want 1 and the empty input named", args, code, stderr)
		}
	}
}

// exemptWithGroup adds a group to the mandatory exempt FlowSchema, which
// validation refuses and the API server would revert.
const exemptWithGroup = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: exempt, annotations: {apf.kubernetes.io/autoupdate-spec: "true"}}
spec:
  matchingPrecedence: 1
  priorityLevelConfiguration: {name: exempt}
  rules:
  - subjects: [{kind: Group, group: {name: system:masters}}, {kind: Group, group: {name: ops}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`

// TestStrictByDefault: commands that use a configuration refuse one that
// validate refuses unless --allow-invalid, and warn about objects the API
// server would revert.
func TestStrictByDefault(t *testing.T) {
	file := writeTemp(t, "exempt.yaml", exemptWithGroup)
	explain := []string{"explain", "--config", file, "--user", "u", "--groups", "ops", "--verb", "list", "--path", "/api/v1/pods"}
	for _, args := range [][]string{explain, {"limits", "--server-concurrency", "100", "--config", file}} {
		code, stdout, stderr := invoke(args...)
		if code != exitFailure || stdout != "" || !strings.Contains(stderr, "the configuration is invalid") || !strings.Contains(stderr, "--allow-invalid") {
			t.Errorf("fairslice %q = %d, %q, stderr %q; want 1 and the configuration refused", args, code, stdout, stderr)
		}
		if !strings.Contains(stderr, `FlowSchema "exempt" is mandatory: the API server reverts its spec`) {
			t.Errorf("fairslice %q stderr %q lacks the revert warning", args, stderr)
		}
		code, stdout, stderr = invoke(append(args, "--allow-invalid")...)
		if code != exitOK || stdout == "" || !strings.Contains(stderr, "warning: using an invalid configuration") {
			t.Errorf("fairslice %q --allow-invalid = %d, %q, stderr %q; want 0 and a warning", args, code, stdout, stderr)
		}
	}
}

func TestSuggestedAutoUpdateWarning(t *testing.T) {
	file := writeTemp(t, "wl.yaml", `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: workload-low, annotations: {apf.kubernetes.io/autoupdate-spec: "true"}}
spec: {type: Limited, limited: {nominalConcurrencyShares: 7, limitResponse: {type: Reject}}}
`)
	code, _, stderr := invoke("validate", file)
	if code != exitOK || !strings.Contains(stderr, `PriorityLevelConfiguration "workload-low" has apf.kubernetes.io/autoupdate-spec: "true" and differs from the bootstrap one`) {
		t.Errorf("validate = %d, stderr %q; want 0 and the revert warning", code, stderr)
	}
}

// TestOutputFormats: -o json and -o yaml print one document of the
// documented shape; text stays the default.
func TestOutputFormats(t *testing.T) {
	for _, tt := range []struct {
		args []string
		keys []string
	}{
		{[]string{"validate", "testdata/apf-config.yaml"}, []string{"valid", "flowSchemas", "priorityLevelConfigurations", "problems", "reverted"}},
		{[]string{"lint", "testdata/apf-config.yaml"}, []string{"findings"}},
		{[]string{"limits", "--server-concurrency", "600"}, []string{"serverConcurrency", "levels", "totalNominal", "totalCurrent"}},
		{[]string{"classify", "testdata/apf-requests.jsonl"}, []string{"results"}},
		{[]string{"explain", "--user", "u", "--verb", "list", "--path", "/api/v1/pods"}, []string{"request", "flowSchema", "priorityLevel", "distinguisher", "tried", "prefixMatch"}},
	} {
		for _, format := range []string{"json", "yaml"} {
			args := append(append([]string{}, tt.args...), "-o", format)
			_, stdout, stderr := invoke(args...)
			var m map[string]any
			var err error
			if format == "json" {
				err = json.Unmarshal([]byte(stdout), &m)
			} else {
				err = yaml.Unmarshal([]byte(stdout), &m)
			}
			if err != nil {
				t.Errorf("fairslice %q: %v; stdout %q, stderr %q", args, err, stdout, stderr)
				continue
			}
			for _, k := range tt.keys {
				if _, ok := m[k]; !ok {
					t.Errorf("fairslice %q output lacks %q: %s", args, k, stdout)
				}
			}
		}
	}
	if code, stdout, _ := invoke("lint", "--allow-invalid=false", "testdata/apf-config.yaml"); code != exitUsage {
		t.Errorf("lint --allow-invalid = %d, %q; lint takes no --allow-invalid", code, stdout)
	}
}

func TestLintCleanSaysSo(t *testing.T) {
	file := writeTemp(t, "ok.yaml", `kind: PriorityLevelConfiguration
apiVersion: flowcontrol.apiserver.k8s.io/v1
metadata: {name: catch-all}
spec: {type: Limited, limited: {nominalConcurrencyShares: 5, lendablePercent: 0, limitResponse: {type: Reject}}}
`)
	code, stdout, stderr := invoke("lint", file)
	if code != exitOK || stdout != "no findings\n" {
		t.Errorf("lint = %d, %q, stderr %q; want 0, \"no findings\"", code, stdout, stderr)
	}
}

// TestEveryCommandTakesO: every command prints one JSON document with -o
// json and one YAML document with -o yaml.
func TestEveryCommandTakesO(t *testing.T) {
	tested := map[string]bool{}
	defer func() {
		for _, c := range commands {
			if !tested[c.name] {
				t.Errorf("command %s is not in TestEveryCommandTakesO", c.name)
			}
		}
	}()
	for _, args := range [][]string{
		{"deal", "--hash", "1"},
		{"odds", "--config", "64x8"},
		{"simulate", "testdata/simulate-example.json"},
		{"classify", "testdata/apf-requests.jsonl"},
		{"explain", "--user", "u", "--verb", "get", "--path", "/healthz"},
		{"validate", "testdata/apf-config.yaml"},
		{"lint", "testdata/apf-config.yaml"},
		{"limits", "--server-concurrency", "100"},
		{"reconcile", "testdata/reconcile-basic.yaml"},
		{"propagation", "--pods", "10", "--nodes", "2"},
		{"sweep", "--pods", "50", "--nodes", "2"},
		{"hints", "testdata/hints-eleven.yaml"},
		{"route", "--node", "node-a", "testdata/hints-eleven.yaml"},
		{"diff", "testdata/apf-config.yaml", "testdata/apf-config.yaml"},
		{"fleet", "--replicas", "2", "--duration", "2s"},
	} {
		tested[args[0]] = true
		seen := false
		for _, c := range commands {
			seen = seen || c.name == args[0]
		}
		if !seen {
			t.Errorf("%s is not a command", args[0])
		}
		for _, format := range []string{"json", "yaml"} {
			a := append(append([]string{}, args...), "-o", format)
			code, stdout, stderr := invoke(a...)
			var v any
			var err error
			if format == "json" {
				err = json.Unmarshal([]byte(stdout), &v)
			} else {
				err = yaml.Unmarshal([]byte(stdout), &v)
			}
			if code == exitUsage || err != nil || v == nil {
				t.Errorf("fairslice %q = %d, %v; stdout %q, stderr %q", a, code, err, stdout, stderr)
			}
		}
	}
}
