package kubescenario_test

import (
	"strings"
	"testing"

	"github.com/fairslice/fairslice/kube/internal/kubescenario"
)

// TestParseHintsDefaults: comments and empty documents are skipped, and
// namespaces default to the Service's, then "default".
func TestParseHintsDefaults(t *testing.T) {
	sc, err := kubescenario.ParseHints([]byte(`# a comment
kind: Service
metadata: {name: web}
---
---
kind: Pod
metadata: {name: p}
`))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Service.Namespace != "default" || sc.Pods[0].Namespace != "default" {
		t.Errorf("namespaces %q, %q; want default", sc.Service.Namespace, sc.Pods[0].Namespace)
	}
}

// TestReadNamesFileAndDocument: every problem is reported at once, each
// naming the object's file and document.
func TestReadNamesFileAndDocument(t *testing.T) {
	objs, err := kubescenario.Objects("s.yaml", []byte("kind: Service\nmetadata: {name: a}\n---\nkind: Service\nmetadata: {name: b}\n---\nkind: Node\nmetadata: {}\n"+
		"---\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: lots}}\n---\nkind: Pod\nmetadata: {name: p}\n---\nkind: Pod\nmetadata: {name: p}\n---\nkind: Secret\nmetadata: {name: s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = kubescenario.ReadHints(objs)
	for _, want := range []string{
		`s.yaml: document 2 (Service "b"): a second Service (the first is "a")`,
		`s.yaml: document 3 (Node ""): metadata.name: missing`,
		`s.yaml: document 4 (Node "n1"): status.allocatable.cpu: "lots" is not a quantity`,
		`s.yaml: document 6 (Pod "p"): metadata.name: duplicate Pod "p"`,
		`s.yaml: document 7 (Secret "s"): kind: "Secret" is not Service, Node or Pod`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadHints error %v, want it to contain %q", err, want)
		}
	}
}
