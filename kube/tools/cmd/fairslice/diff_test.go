package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiff(t *testing.T) {
	base, err := os.ReadFile("testdata/apf-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(base), "distinguisherMethod: {type: ByNamespace}", "distinguisherMethod: {type: ByUser}", 1)
	changed = strings.Replace(changed, "nominalConcurrencyShares: 20", "nominalConcurrencyShares: 40", 1)
	if changed == string(base) {
		t.Fatal("testdata/apf-config.yaml no longer has the fields this test edits")
	}
	newFile := writeTemp(t, "new.yaml", changed)

	code, stdout, stderr := invoke("diff", "testdata/apf-config.yaml", newFile, "--server-concurrency", "600", "-o", "json")
	if code != exitFailure {
		t.Fatalf("diff = %d, want 1 (differences); stderr %s", code, stderr)
	}
	var got diffResult
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("diff -o json: %v\n%s", err, stdout)
	}
	wantObjects := []objectChange{{"FlowSchema", "team-a", "changed"}, {"PriorityLevelConfiguration", "team", "changed"}}
	if diff := cmp.Diff(wantObjects, got.Objects); diff != "" {
		t.Errorf("diff objects mismatch (-want +got):\n%s", diff)
	}
	for _, l := range got.Limits {
		if l.Name == "team" && (l.Old == nil || l.New == nil || l.New.Nominal <= l.Old.Nominal) {
			t.Errorf("diff limits of team = %+v → %+v, want a larger nominal limit", l.Old, l.New)
		}
	}
	if len(got.Changed) == 0 || got.Changed[0].Old.FlowSchema != "team-a" || got.Changed[0].Old.Distinguisher != "team-a" || got.Changed[0].New.Distinguisher == "team-a" {
		t.Errorf("diff changed requests = %+v; want team-a's covering request to change distinguisher from the namespace to the user", got.Changed)
	}

	code, stdout, stderr = invoke("diff", "testdata/apf-config.yaml", "testdata/apf-config.yaml")
	if code != exitOK || !strings.Contains(stdout, "no FlowSchema or PriorityLevelConfiguration differs") || !strings.Contains(stdout, "0 of ") {
		t.Errorf("diff of a file with itself = %d, %q, stderr %q; want 0 and no differences", code, stdout, stderr)
	}
	stdin = strings.NewReader(`{"user": "alice", "groups": ["team-a"], "verb": "list", "path": "/api/v1/namespaces/team-a/pods"}` + "\n")
	code, stdout, _ = invoke("diff", "--requests", "-", "testdata/apf-config.yaml", newFile)
	if code != exitFailure || !strings.Contains(stdout, "1 of 1 requests change classification") ||
		!strings.Contains(stdout, "alice list pods in team-a (groups team-a): team-a/team/team-a → team-a/team/alice") {
		t.Errorf("diff --requests = %d:\n%s", code, stdout)
	}
	if code, _, stderr := invoke("diff", "testdata/apf-config.yaml"); code != exitUsage || !strings.Contains(stderr, "expected two configuration files") {
		t.Errorf("diff with one file = %d, %q", code, stderr)
	}
}
