package main

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestSelectionAsTheController: Pods in another namespace or not matched
// by the Service's selector are left out (and counted on stderr), so the
// hints and plans do not change when a kubectl dump of a whole cluster is
// the input. Before, every Pod in the file was an endpoint.
func TestSelectionAsTheController(t *testing.T) {
	base, err := os.ReadFile("testdata/hints-eleven.yaml")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/hints-eleven.golden")
	if err != nil {
		t.Fatal(err)
	}
	extra := `
---
kind: Pod
apiVersion: v1
metadata: {name: elsewhere, namespace: other, labels: {app: web}}
spec: {nodeName: node-a}
status: {phase: Running, podIPs: [{ip: 10.9.0.1}], conditions: [{type: Ready, status: "True"}]}
---
kind: Pod
apiVersion: v1
metadata: {name: unrelated, namespace: shop, labels: {app: db}}
spec: {nodeName: node-a}
status: {phase: Running, podIPs: [{ip: 10.9.0.2}], conditions: [{type: Ready, status: "True"}]}
`
	stdin = strings.NewReader(string(base) + extra)
	code, stdout, stderr := invoke("hints", "-")
	if code != exitOK || stdout != string(golden) {
		t.Errorf("hints - = %d, %q, want %q; stderr %s", code, stdout, golden, stderr)
	}
	if want := `left out 2 Pods: 1 in other namespaces than "shop", 1 not matched by the selector`; !strings.Contains(stderr, want) {
		t.Errorf("hints stderr %q lacks %q", stderr, want)
	}
	stdin = strings.NewReader(string(base) + extra)
	code, stdout, stderr = invoke("route", "--node", "node-a", "-", "-o", "json")
	if code != exitOK || !strings.Contains(stdout, `"node": "node-a"`) || strings.Contains(stdout, "10.9.0.") {
		t.Errorf("route - -o json = %d, %s; stderr %s; want node-a without the left-out Pods", code, stdout, stderr)
	}
}

// TestSelectorlessService: upstream's controller manages no slices for a
// Service without a selector; reconcile plans nothing and leaves the
// existing slices, hints refuses.
func TestSelectorlessService(t *testing.T) {
	in := "kind: Service\nmetadata: {name: s, namespace: ns1, uid: u}\nspec: {ipFamilies: [IPv4], clusterIP: 10.0.0.1, ports: [{port: 80}]}\n" +
		"---\nkind: Pod\nmetadata: {name: p, namespace: ns1}\nspec: {nodeName: a}\nstatus: {phase: Running, podIP: 10.1.1.1}\n" +
		"---\nkind: EndpointSlice\napiVersion: discovery.k8s.io/v1\nmetadata: {name: s-1, namespace: ns1, labels: {kubernetes.io/service-name: s}}\naddressType: IPv4\nendpoints: [{addresses: [10.2.2.2]}]\n"
	stdin = strings.NewReader(in)
	code, stdout, stderr := invoke("reconcile", "-")
	want := `{"creates": 0, "updates": 0, "deletes": 0, "lengths": [1]}` + "\n"
	if code != exitOK || stdout != want || !strings.Contains(stderr, "has no selector") {
		t.Errorf("reconcile - = %d, %q, stderr %q; want 0, %q and the reason", code, stdout, stderr, want)
	}
	stdin = strings.NewReader(in)
	if code, _, stderr := invoke("hints", "-"); code != exitFailure || !strings.Contains(stderr, "has no selector") {
		t.Errorf("hints - = %d, stderr %q; want 1 and the reason", code, stderr)
	}
}

// TestTopologyReadsLists: the scenario as one kubectl List (JSON, items
// with kind) gives the same hints as the YAML documents; before, the
// topology commands refused List dumps.
func TestTopologyReadsLists(t *testing.T) {
	objs, err := readObjects("testdata/hints-eleven.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, o := range objs {
		j, err := yaml.YAMLToJSON(o.Raw)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, string(j))
	}
	list := `{"apiVersion": "v1", "kind": "List", "items": [` + strings.Join(items, ",") + `]}`
	golden, err := os.ReadFile("testdata/hints-eleven.golden")
	if err != nil {
		t.Fatal(err)
	}
	stdin = strings.NewReader(list)
	if code, stdout, stderr := invoke("hints", "-"); code != exitOK || stdout != string(golden) {
		t.Errorf("hints - (a List) = %d, %q, want %q; stderr %s", code, stdout, golden, stderr)
	}
}
