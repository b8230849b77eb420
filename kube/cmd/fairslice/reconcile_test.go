package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReconcile(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--max-endpoints-per-slice", "2", "testdata/reconcile-basic.yaml"},
			`{"creates": 2, "updates": 1, "deletes": 0, "lengths": [2, 2, 1]}` + "\n"},
		{[]string{"testdata/reconcile-basic.yaml", "--upstream", "--max-endpoints-per-slice=2"},
			`{"creates": 2, "updates": 1, "deletes": 0, "lengths": [2, 2, 1]}` + "\n"},
		{[]string{"testdata/reconcile-basic.yaml"},
			`{"creates": 0, "updates": 1, "deletes": 0, "lengths": [5]}` + "\n"},
		{[]string{"--upstream", "testdata/reconcile-basic.yaml"},
			`{"creates": 0, "updates": 1, "deletes": 0, "lengths": [5]}` + "\n"},
	}
	for _, tt := range tests {
		if upstreamUnavailable(tt.args) {
			continue
		}
		code, stdout, stderr := invoke(append([]string{"reconcile"}, tt.args...)...)
		if code != exitOK || stdout != tt.want {
			t.Errorf("reconcile %q = %d, %q, want 0, %q; stderr:\n%s", tt.args, code, stdout, tt.want, stderr)
		}
	}
}

func TestReconcileErrors(t *testing.T) {
	tests := []struct {
		args       []string
		stdin      string
		wantCode   int
		wantStderr string
	}{
		{[]string{}, "", exitUsage, "missing scenario file"},
		{[]string{"--max-endpoints-per-slice", "0", "x.yaml"}, "", exitUsage, "out of range 1..1000"},
		{[]string{"--max-endpoints-per-slice", "1001", "x.yaml"}, "", exitUsage, "out of range 1..1000"},
		{[]string{"--bogus", "x.yaml"}, "", exitUsage, "flag provided but not defined"},
		{[]string{"testdata/does-not-exist.yaml"}, "", exitFailure, "no such file"},
		{[]string{"-"}, "kind: Pod\nmetadata: {name: p}\n", exitFailure, "no Service document"},
		{[]string{"-"}, "kind: Secret\n", exitFailure, `ignoring standard input: document 1 (Secret ""): reconcile uses only Service, Pod, Node, EndpointSlice`},
		{[]string{"-"}, "", exitFailure, "standard input: no objects (the input is empty)"},
		{[]string{"-"}, "kind: Service\nmetadata: {name: s}\nspec: {selector: {a: b}}\n---\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: lots}}\n",
			exitFailure, `standard input: document 2 (Node "n1"): status.allocatable.cpu: "lots" is not a quantity`},
		{[]string{"-"}, "kind: Service\nmetadata: {name: s}\nspec: {bogus: 1}\n", exitFailure, "bogus"},
		{[]string{"-"}, "kind: Service\nmetadata: {name: s}\n---\nkind: Service\nmetadata: {name: t}\n", exitUsage, "2 Services in the input"},
		{[]string{"--service", "u", "-"}, "kind: Service\nmetadata: {name: s}\n---\nkind: Service\nmetadata: {name: t}\n", exitFailure, "no Service default/u in the input"},
		{[]string{"--help"}, "", exitOK, "Usage:"},
	}
	for _, tt := range tests {
		stdin = strings.NewReader(tt.stdin)
		code, stdout, stderr := invoke(append([]string{"reconcile"}, tt.args...)...)
		if code != tt.wantCode || !strings.Contains(stderr, tt.wantStderr) || (code != exitOK && stdout != "") {
			t.Errorf("reconcile %q = %d, stdout %q, stderr %q; want %d and stderr containing %q",
				tt.args, code, stdout, stderr, tt.wantCode, tt.wantStderr)
		}
	}
}

func TestReconcileReportsSkippedPods(t *testing.T) {
	in := "kind: Service\nmetadata: {name: s, namespace: n, uid: u}\nspec: {selector: {app: a}, ipFamilies: [IPv4], clusterIP: 10.0.0.1, ports: [{port: 80}]}\n" +
		"---\nkind: Pod\nmetadata: {name: p, namespace: n, labels: {app: a}}\nspec: {nodeName: gone}\nstatus: {phase: Running, podIP: 10.1.1.1}\n"
	for _, tc := range []struct {
		args []string
		code int
	}{{[]string{"-"}, exitOK}, {[]string{"--upstream", "-"}, exitFailure}} {
		if upstreamUnavailable(tc.args) {
			continue
		}
		stdin = strings.NewReader(in)
		code, stdout, stderr := invoke(append([]string{"reconcile"}, tc.args...)...)
		want := `{"creates": 1, "updates": 0, "deletes": 0, "lengths": [0]}` + "\n"
		if code != tc.code || stdout != want || !strings.Contains(stderr, "gone") {
			t.Errorf("reconcile %q = %d, %q, stderr %q; want %d, %q and the missing node reported", tc.args, code, stdout, stderr, tc.code, want)
		}
	}
}

// TestReconcileUpstreamNameCollision: an existing slice already has the
// name the fake API server would give the first create; upstream's run
// must neither fail on "already exists" nor miscount.
func TestReconcileUpstreamNameCollision(t *testing.T) {
	in := "kind: Service\nmetadata: {name: s, namespace: n, uid: u}\nspec: {selector: {app: a}, ipFamilies: [IPv4], clusterIP: 10.0.0.1, ports: [{port: 80}]}\n" +
		"---\nkind: Node\nmetadata: {name: node}\n" +
		"---\nkind: Pod\nmetadata: {name: p, namespace: n, labels: {app: a}}\nspec: {nodeName: node}\nstatus: {phase: Running, podIP: 10.1.1.1}\n" +
		"---\nkind: EndpointSlice\nmetadata: {name: s-00001, namespace: n, labels: {kubernetes.io/service-name: s, endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io}}\naddressType: IPv4\nendpoints: []\n"
	want := `{"creates": 1, "updates": 0, "deletes": 1, "lengths": [1]}` + "\n"
	for _, args := range [][]string{{"-"}, {"--upstream", "-"}} {
		if upstreamUnavailable(args) {
			continue
		}
		stdin = strings.NewReader(in)
		code, stdout, stderr := invoke(append([]string{"reconcile"}, args...)...)
		if code != exitOK || stdout != want {
			t.Errorf("reconcile %q = %d, %q, stderr %q; want 0, %q", args, code, stdout, stderr, want)
		}
	}
}

func TestPropagation(t *testing.T) {
	code, stdout, stderr := invoke("propagation", "--pods", "20000", "--nodes=5000")
	for _, want := range []string{"Rolling update of 20000 pods watched by 5000 nodes", "220 TB", "1.28 TB", "at 14377 pods"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("propagation = %d, stdout:\n%s\nstderr: %s\nwant it to contain %q", code, stdout, stderr, want)
		}
	}
	for _, args := range [][]string{{"--pods", "0"}, {"--nodes", "x"}, {"extra"}} {
		if code, _, _ := invoke(append([]string{"propagation"}, args...)...); code != exitUsage {
			t.Errorf("propagation %q = %d, want %d", args, code, exitUsage)
		}
	}
}

func TestReconcileOutputIsJSON(t *testing.T) {
	code, stdout, _ := invoke("reconcile", "--max-endpoints-per-slice", "2", "testdata/reconcile-basic.yaml")
	var got struct {
		Creates, Updates, Deletes int
		Lengths                   []int
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != exitOK || got.Creates != 2 || len(got.Lengths) != 3 {
		t.Errorf("reconcile output %q does not decode as the outcome: %v", stdout, err)
	}
}
