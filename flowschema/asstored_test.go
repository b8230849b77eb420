package flowschema

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// storedConfig is the configuration of issue 30 as a fake clientset holds
// it: level p has 10000 shares and limitResponse {queuing: {handSize: 20}},
// no type, queues and queueLengthLimit 0; level other rejects; FlowSchemas
// early (precedence 0) and late (precedence 500) both match user alice,
// early to p, late to other.
func storedConfig(t *testing.T) *Config { return storedConfigResponse(t, "{queuing: {handSize: 20}}") }

// storedConfigResponse is storedConfig with p's limitResponse replaced.
func storedConfigResponse(t *testing.T, limitResponse string) *Config {
	t.Helper()
	cfg, err := Decode([]byte(strings.Replace(`
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: p}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10000
    limitResponse: LR
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: other}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: early}
spec:
  priorityLevelConfiguration: {name: p}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: alice}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: late}
spec:
  priorityLevelConfiguration: {name: other}
  matchingPrecedence: 500
  rules:
  - subjects: [{kind: User, user: {name: alice}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
`, "LR", limitResponse, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestCompileAsStored: with AsStored, Compile uses the objects as given
// (as upstream's controller uses its informers' objects): p keeps queues 0
// (and its hand of 20, see seats' TestComputeLimitsAsStored), and early's
// precedence 0 puts it first. Without, the defaults give p
// 64 queues, which a hand of 20 cannot be dealt from (120 bits), so p is
// ignored and early dangles.
func TestCompileAsStored(t *testing.T) {
	type result struct {
		Levels   []string
		Ignored  []string
		Dangling []string
		Schema   string // alice's
		HasFlow  bool
		Queues   int32 // p's, when kept
	}
	tests := []struct {
		opts CompileOptions
		want result
	}{
		{CompileOptions{AsStored: true}, result{
			Levels: []string{"p", "other", "exempt", "catch-all"}, Schema: "early",
		}},
		{CompileOptions{}, result{
			Levels: []string{"other", "exempt", "catch-all"}, Ignored: []string{"p"}, Dangling: []string{"early"}, Schema: "late",
		}},
	}
	for _, tt := range tests {
		c, err := CompileWith(storedConfig(t), tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		var got result
		for _, pl := range c.PriorityLevels() {
			got.Levels = append(got.Levels, pl.Name)
			if pl.Name == "p" {
				got.Queues = pl.Spec.Limited.LimitResponse.Queuing.Queues
			}
		}
		for _, l := range c.IgnoredLevels() {
			got.Ignored = append(got.Ignored, l.Name)
		}
		for _, d := range c.DanglingSchemas() {
			got.Dangling = append(got.Dangling, d.Name)
		}
		d := c.Classify(&Request{User: "alice", Groups: []string{GroupAuthenticated}, Verb: "get", Resource: "pods", Namespace: "ns", ResourceRequest: true})
		got.Schema, got.HasFlow = d.FlowSchema, d.HasFlow
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("CompileWith(issue 30's objects, %+v) mismatch (-want +got):\n%s", tt.opts, diff)
		}
	}
}

// TestValidateAsStored: ValidateAsStored reports the zero fields that
// Validate's defaulting fills (and that the API server therefore never
// stores). p has type Queue here, so that its queuing section is checked.
func TestValidateAsStored(t *testing.T) {
	fields := func(err error) []string {
		var l ErrorList
		if !errors.As(err, &l) {
			t.Fatalf("error %v is not an ErrorList", err)
		}
		var out []string
		for _, e := range l {
			out = append(out, e.Name+" "+e.Field)
		}
		return out
	}
	tests := []struct {
		name     string
		validate func(*Config) error
		want     []string
	}{
		{"Validate", Validate, []string{
			"p spec.limited.limitResponse.queuing.handSize", // 64 queues, hand 20: 120 bits
		}},
		{"ValidateAsStored", ValidateAsStored, []string{
			"early spec.matchingPrecedence",
			"p spec.limited.limitResponse.queuing.handSize", // more than 0 queues
			"p spec.limited.limitResponse.queuing.queueLengthLimit",
			"p spec.limited.limitResponse.queuing.queues",
		}},
	}
	for _, tt := range tests {
		got := fields(tt.validate(storedConfigResponse(t, "{type: Queue, queuing: {handSize: 20}}")))
		slices.Sort(got)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s(issue 30's objects) fields mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}
