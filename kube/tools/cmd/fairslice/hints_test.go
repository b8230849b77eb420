package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var hintsUpdate = flag.Bool("hints.update", false, "rewrite testdata/hints-*.golden from --upstream output")

// TestHintsGolden runs "fairslice hints" on testdata/hints-*.yaml. The
// golden files hold upstream's output (k8s.io/endpointslice v0.37.2,
// regenerate with: go test -tags upstream ./tools/cmd/fairslice -run TestHintsGolden
// -hints.update), and fairslice must print the same.
func TestHintsGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/hints-*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/hints-*.yaml")
	}
	for _, name := range files {
		golden := strings.TrimSuffix(name, ".yaml") + ".golden"
		if *hintsUpdate {
			code, stdout, stderr := invoke("hints", "--upstream", name)
			if code != exitOK {
				t.Fatalf("hints --upstream %s = %d: %s", name, code, stderr)
			}
			if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"hints", name}, {"hints", "--upstream", name}} {
			if upstreamUnavailable(args) {
				continue
			}
			code, stdout, stderr := invoke(args...)
			if code != exitOK || stdout != string(want) {
				t.Errorf("fairslice %s = %d\n%s\nwant\n%s\nstderr: %s", strings.Join(args, " "), code, stdout, want, stderr)
			}
		}
	}
}

func TestHintsMinCrossKeepsElevenEndpoints(t *testing.T) {
	code, stdout, stderr := invoke("hints", "--min-cross-zone", "testdata/hints-eleven.yaml")
	want := `{"enabled":true,"reason":"","hintsByZone":{"zone-a":7,"zone-b":4,"zone-c":7},"crossZone":7}` + "\n"
	if code != exitOK || stdout != want {
		t.Errorf("hints --min-cross-zone = %d %q, want %q; stderr %s", code, stdout, want, stderr)
	}
}

func TestHintsErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	svc := "kind: Service\nmetadata: {name: web}\n"
	tests := []struct {
		args     []string
		code     int
		contains []string
	}{
		{[]string{"hints"}, exitUsage, []string{"missing scenario file"}},
		{[]string{"hints", "a", "b"}, exitFailure, []string{"open a: no such file"}},
		{[]string{"hints", "--upstream", "--min-cross-zone", "x"}, exitUsage, []string{"exclude each other"}},
		{[]string{"hints", "--help"}, exitOK, []string{"hintsByZone"}},
		{[]string{"hints", filepath.Join(dir, "missing.yaml")}, exitFailure, []string{"no such file"}},
		{[]string{"hints", write("bad.yaml", svc+"---\nkind: Node\nmetadata: {name: n1}\n  bad: [\n")}, exitFailure, []string{"document 2"}},
		{[]string{"hints", write("cpu.yaml", svc+"---\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: lots}}\n")}, exitFailure,
			[]string{`document 2 (Node "n1")`, "status.allocatable.cpu", `"lots" is not a quantity`}},
		{[]string{"hints", write("dup.yaml", svc+"---\nkind: Pod\nmetadata: {name: p}\n---\nkind: Pod\nmetadata: {name: p}\n")}, exitFailure,
			[]string{`document 3 (Pod "p")`, "duplicate Pod"}},
		{[]string{"hints", write("ip.yaml", svc+"---\nkind: Pod\nmetadata: {name: p}\nstatus: {podIPs: [{ip: 10.0.0.1}]}\n---\nkind: Pod\nmetadata: {name: q}\nstatus: {podIPs: [{ip: 10.0.0.1}]}\n")}, exitFailure,
			[]string{`pod "q": status.podIPs[0]: 10.0.0.1 is also the IP of pod "p"`}},
		{[]string{"hints", write("kind.yaml", svc+"---\nkind: Deployment\nmetadata: {name: d}\n")}, exitFailure,
			[]string{`ignoring ` + filepath.Join(dir, "kind.yaml") + `: document 2 (Deployment "d"): hints uses only Service, Pod, Node`, `(Service "web") has no selector: the EndpointSlice controller manages no EndpointSlices`}},
		{[]string{"hints", write("none.yaml", "kind: Node\nmetadata: {name: node1}\n")}, exitFailure, []string{"no Service"}},
		{[]string{"hints", write("field.yaml", "kind: Service\nmetadata: {name: web}\nspec: {trafficDistrbution: PreferClose}\n")}, exitFailure, []string{"unknown field", "trafficDistrbution"}},
		{[]string{"route", "testdata/hints-eleven.yaml"}, exitUsage, []string{"--node is required"}},
		{[]string{"route", "--node", "nope", "testdata/hints-eleven.yaml"}, exitFailure, []string{`node "nope" is not in`}},
	}
	for _, tc := range tests {
		code, _, stderr := invoke(tc.args...)
		if code != tc.code {
			t.Errorf("fairslice %q = %d, want %d; stderr:\n%s", tc.args, code, tc.code, stderr)
		}
		for _, want := range tc.contains {
			if !strings.Contains(stderr, want) {
				t.Errorf("fairslice %q stderr = %q, want it to contain %q", tc.args, stderr, want)
			}
		}
	}
}

func TestRoute(t *testing.T) {
	code, stdout, stderr := invoke("route", "--node", "node-c", "testdata/hints-twelve.yaml")
	if code != exitOK {
		t.Fatalf("route = %d: %s", code, stderr)
	}
	want := []string{"node node-c (zone zone-c): mode PreferSameZone", "cluster 10.0.3.1 node=node-c zone=zone-c hints=zone-c"}
	for _, w := range want {
		if !strings.Contains(stdout, w) {
			t.Errorf("route output %q lacks %q", stdout, w)
		}
	}
	if n := strings.Count(stdout, "\ncluster "); n != 4 {
		t.Errorf("route lists %d cluster endpoints, want 4 (zone-c's share):\n%s", n, stdout)
	}
	code, stdout, _ = invoke("route", "testdata/hints-eleven.yaml", "--node", "node-a")
	if code != exitOK || !strings.Contains(stdout, "mode none: hints ignored: one or more ready endpoints have no zone hint") || strings.Count(stdout, "\ncluster ") != 11 {
		t.Errorf("route with hints off:\n%s", stdout)
	}
}
