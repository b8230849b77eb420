package flowschema

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func names(c *Config) []string {
	var out []string
	for _, pl := range c.PriorityLevels {
		out = append(out, "PL "+pl.Name)
	}
	for _, fs := range c.FlowSchemas {
		out = append(out, "FS "+fs.Name)
	}
	return out
}

func TestDecodeForms(t *testing.T) {
	list := `apiVersion: v1
kind: List
items:
- apiVersion: flowcontrol.apiserver.k8s.io/v1
  kind: FlowSchema
  metadata: {name: a, uid: 123, resourceVersion: "9"}
  spec: {priorityLevelConfiguration: {name: p}, matchingPrecedence: 7}
- apiVersion: flowcontrol.apiserver.k8s.io/v1
  kind: PriorityLevelConfiguration
  metadata: {name: p}
  spec: {type: Limited, limited: {limitResponse: {type: Reject}}}
`
	tests := []struct {
		name, in string
		want     []string
	}{
		{"list", list, []string{"PL p", "FS a"}},
		{"multi-doc", "# c\n---\nkind: FlowSchema\nmetadata: {name: a}\n---\n---\nkind: PriorityLevelConfiguration\nmetadata: {name: p}\n", []string{"PL p", "FS a"}},
		{"json stream", `{"kind":"FlowSchema","metadata":{"name":"a"}} {"kind":"FlowSchemaList","items":[{"kind":"FlowSchema","metadata":{"name":"b"}}]}`, []string{"FS a", "FS b"}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		cfg, err := Decode([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: Decode: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, names(cfg)); diff != "" {
			t.Errorf("%s: Decode mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
	cfg, _ := Decode([]byte(list))
	if cfg.FlowSchemas[0].Spec.MatchingPrecedence != 7 || cfg.PriorityLevels[0].Spec.Limited.LimitResponse.Type != "Reject" {
		t.Errorf("Decode(list) lost spec fields: %+v", cfg)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"kind: Pod\nmetadata: {name: x}\n", `document 1: unsupported kind "Pod"`},
		{"metadata: {name: x}\n", "document 1: missing kind"},
		{"apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\n", `unsupported apiVersion "flowcontrol.apiserver.k8s.io/v1beta3"`},
		{"kind: FlowSchema\nspec: {matchingPrecedence: high}\n", "field spec.matchingPrecedence"},
		{"kind: List\nitems:\n- {kind: FlowSchema}\n- {kind: Secret}\n", "document 1, items[1]: unsupported kind"},
		{"{\"kind\": ", "JSON document 1"},
		{"a: [", "YAML document 1"},
	} {
		_, err := Decode([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode(%q) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
}

// roundTrip returns cfg encoded and decoded again, failing t if either
// step fails.
func roundTrip(t *testing.T, cfg *Config) *Config {
	t.Helper()
	var buf bytes.Buffer
	if err := cfg.Encode(&buf); err != nil {
		t.Fatalf("Encode: %v", err)
	}
	back, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatalf("Decode(Encode(cfg)): %v\n%s", err, buf.Bytes())
	}
	return back
}

func TestEncodeRoundTrip(t *testing.T) {
	back := roundTrip(t, DefaultConfig())
	if diff := cmp.Diff(names(DefaultConfig()), names(back)); diff != "" {
		t.Errorf("round trip names (-want +got):\n%s", diff)
	}
	if !specEqual(DefaultConfig().FlowSchemas, back.FlowSchemas) {
		t.Errorf("round trip changed the FlowSchemas")
	}
}

// TestEncodeControlCharacters: names YAML cannot carry as they are (DEL,
// a C1 control, a byte-order mark) still encode, and decode back as they
// were. Validation would refuse them; Encode must not fail on them.
func TestEncodeControlCharacters(t *testing.T) {
	cfg := &Config{}
	for _, name := range []string{"del\x7f", "nel\u0085", "c1\u009b", "bom\ufeff", "plain", "t\tab"} {
		pl := PriorityLevelConfiguration{}
		pl.Name = name
		cfg.PriorityLevels = append(cfg.PriorityLevels, pl)
	}
	back := roundTrip(t, cfg)
	if diff := cmp.Diff(names(cfg), names(back)); diff != "" {
		t.Errorf("round trip names (-want +got):\n%s", diff)
	}
}

func TestLintFindings(t *testing.T) {
	cfg := DefaultConfig()
	// Drop the exempt level: the exempt and probes FlowSchemas dangle.
	cfg.PriorityLevels = cfg.PriorityLevels[:1]
	cfg.PriorityLevels = append(cfg.PriorityLevels, queuingPL("lonely", 5, 0, 64, 6), queuingPL("broken", 5, 0, 128, 9))
	cfg.FlowSchemas = append(cfg.FlowSchemas[:2],
		newFS("to-broken", "broken", 50, "", PolicyRulesWithSubjects{Subjects: []Subject{user("a")}, NonResourceRules: []NonResourcePolicyRule{allNonResources()}}),
		newFS("empty", "catch-all", 60, ""))
	cfg.FlowSchemas[1], cfg.FlowSchemas[0] = cfg.FlowSchemas[0], newFS("probes", PriorityLevelNameExempt, 2, "", PolicyRulesWithSubjects{
		Subjects: []Subject{group(GroupAuthenticated)}, NonResourceRules: []NonResourcePolicyRule{allNonResources()}})
	findings, err := Lint(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range findings {
		got = append(got, string(f.Kind)+" "+f.Name+" "+strings.Join(f.Causes, ","))
	}
	want := []string{
		"ignored-level broken to-broken",
		"dangling probes exempt",
		"dangling exempt exempt",
		"dangling to-broken broken",
		"never-matches empty ",
		"unreachable lonely ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Lint mismatch (-want +got):\n%s\n%v", diff, findings)
	}
}
