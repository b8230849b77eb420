package flowschemacompare

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/fairslice/fairslice/flowschema"
)

// asJSON renders metadata.name, metadata.annotations and spec of an
// object, which is what the bootstrap objects define.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Metadata struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestBootstrapObjects compares flowschema's mandatory and suggested
// objects, in order, with k8s.io/apiserver's bootstrap package.
func TestBootstrapObjects(t *testing.T) {
	var want, got []string
	for _, fs := range bootstrap.MandatoryFlowSchemas {
		want = append(want, asJSON(t, fs))
	}
	for _, fs := range bootstrap.SuggestedFlowSchemas {
		want = append(want, asJSON(t, fs))
	}
	for _, pl := range bootstrap.MandatoryPriorityLevelConfigurations {
		want = append(want, asJSON(t, pl))
	}
	for _, pl := range bootstrap.SuggestedPriorityLevelConfigurations {
		want = append(want, asJSON(t, pl))
	}
	for _, fs := range append(flowschema.MandatoryFlowSchemas(), flowschema.SuggestedFlowSchemas()...) {
		got = append(got, asJSON(t, fs))
	}
	for _, pl := range append(flowschema.MandatoryPriorityLevels(), flowschema.SuggestedPriorityLevels()...) {
		got = append(got, asJSON(t, pl))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bootstrap objects mismatch (-upstream +fairslice):\n%s", diff)
	}
}
