package flowschema

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/shufflesharding"
)

// customConfig is driving-upstream.md §3's reference configuration: the
// bootstrap objects plus custom-fs → custom-pl matching alice's
// deployments in team-a and team-b, by namespace.
func customConfig() *Config {
	cfg := DefaultConfig()
	cfg.PriorityLevels = append(cfg.PriorityLevels, queuingPL("custom-pl", 10, 0, 64, 6))
	cfg.FlowSchemas = append(cfg.FlowSchemas, newFS("custom-fs", "custom-pl", 500, DistinguisherByNamespace, PolicyRulesWithSubjects{
		Subjects: []Subject{user("alice")},
		ResourceRules: []ResourcePolicyRule{{Verbs: []string{VerbAll}, APIGroups: []string{"apps"},
			Resources: []string{"deployments"}, Namespaces: []string{"team-a", "team-b"}}},
	}))
	return cfg
}

var authenticated = []string{GroupAuthenticated}

// TestClassifyReferenceOutcomes checks the outcomes upstream's controller
// produces (driving-upstream.md §3, "Reference outcomes").
func TestClassifyReferenceOutcomes(t *testing.T) {
	c, err := Compile(customConfig())
	if err != nil {
		t.Fatal(err)
	}
	res := func(user string, groups []string, verb, group, resource, sub, ns string) Request {
		return Request{User: user, Groups: groups, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub,
			Namespace: ns, ResourceRequest: true}
	}
	tests := []struct {
		name        string
		req         Request
		fs, pl, dis string
		exempt      bool
	}{
		{"custom", res("alice", authenticated, "list", "apps", "deployments", "", "team-a"), "custom-fs", "custom-pl", "team-a", false},
		{"custom-miss", res("alice", authenticated, "list", "apps", "deployments", "", "team-c"), "global-default", "global-default", "alice", false},
		{"masters", res("root", []string{GroupSystemMasters, GroupAuthenticated}, "delete", "", "pods", "", "x"), "exempt", "exempt", "", true},
		{"probe", Request{User: "system:anonymous", Groups: []string{GroupUnauthenticated}, Verb: "get", Path: "/healthz"}, "probes", "exempt", "", true},
		{"kubelet", res("system:node:n1", []string{GroupNodes, GroupAuthenticated}, "patch", "", "nodes", "status", ""), "system-node-high", "node-high", "system:node:n1", false},
		{"kcm-lease", res(UserKubeControllerManager, authenticated, "update", "coordination.k8s.io", "leases", "", "kube-system"), "system-leader-election", "leader-election", UserKubeControllerManager, false},
		{"kube-system-sa", res("system:serviceaccount:kube-system:foo", []string{GroupServiceAccounts, GroupAuthenticated}, "get", "", "pods", "", "kube-system"), "kube-system-service-accounts", "workload-high", "kube-system", false},
		{"sa", res("system:serviceaccount:ns1:foo", []string{GroupServiceAccounts, GroupAuthenticated}, "get", "", "pods", "", "ns1"), "service-accounts", "workload-low", "system:serviceaccount:ns1:foo", false},
		{"no-groups", res("bob", nil, "get", "", "pods", "", "ns1"), "catch-all", "catch-all", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := c.Classify(&tt.req)
			got := []any{d.FlowSchema, d.PriorityLevel, d.Distinguisher, d.Exempt}
			want := []any{tt.fs, tt.pl, tt.dis, tt.exempt}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Classify(%+v) mismatch (-want +got):\n%s", tt.req, diff)
			}
			wantHash := uint64(0)
			if d.HasFlow {
				wantHash = shufflesharding.FlowHash(tt.fs, tt.dis)
			}
			if d.FlowHash != wantHash {
				t.Errorf("Classify(%+v).FlowHash = %#x, want %#x", tt.req, d.FlowHash, wantHash)
			}
		})
	}
}

func TestClassifyAllocs(t *testing.T) {
	c, err := Compile(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{User: "system:node:n1", Groups: []string{GroupNodes, GroupAuthenticated}, Verb: "patch",
		Resource: "nodes", Subresource: "status", ResourceRequest: true}
	if n := testing.AllocsPerRun(100, func() { c.Classify(req) }); n != 0 {
		t.Errorf("Classify allocates %v times per call, want 0", n)
	}
}

// TestClassifyManyGroups covers requests whose groups occur in more
// subject sets than the index unions (maxSubjectSets): with more than 64
// rules they take the linear scan, with fewer the one-word path, which has
// no bound; both must agree with the reference.
func TestClassifyManyGroups(t *testing.T) {
	for _, padding := range []int{0, 64} {
		cfg := DefaultConfig()
		var groups []string
		for i := range 2 * maxSubjectSets {
			g := fmt.Sprintf("g%d", i)
			groups = append(groups, g)
			cfg.FlowSchemas = append(cfg.FlowSchemas, newFS("fs-"+g, "global-default", int32(1000+i), DistinguisherByUser, PolicyRulesWithSubjects{
				Subjects:         []Subject{group(g)},
				NonResourceRules: []NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{fmt.Sprintf("/p%d", i)}}},
			}))
		}
		for i := range padding {
			cfg.FlowSchemas = append(cfg.FlowSchemas, newFS(fmt.Sprintf("pad-%d", i), "global-default", 2000, DistinguisherByUser,
				PolicyRulesWithSubjects{Subjects: []Subject{user(fmt.Sprintf("pad-%d", i))}, NonResourceRules: []NonResourcePolicyRule{allNonResources()}}))
		}
		c, err := Compile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.idx.words > 1, padding > 0; got != want {
			t.Fatalf("padding %d: %d index words", padding, c.idx.words)
		}
		for _, path := range []string{"/p0", "/p20", "/p31", "/nowhere"} {
			req := Request{User: "u", Groups: append(slices.Clone(groups), GroupAuthenticated), Verb: "get", Path: path}
			d := c.Classify(&req)
			s, r := referenceClassify(c, &req)
			if d.SchemaIndex != s || d.Rule != r {
				t.Errorf("padding %d: Classify(%s) = %s rules[%d], reference %s rules[%d]", padding, path, d.FlowSchema, d.Rule, c.schemas[s].Name, r)
			}
		}
	}
}

// TestClassifyAlmostWildcardRules covers the index's shortcut for rules
// that match every request of a kind: each rule here is a wildcard rule
// but for one detail, so the shortcut must not take it, and the request
// falls through to global-default (or matches, where the detail allows).
func TestClassifyAlmostWildcardRules(t *testing.T) {
	every := allResources()
	noCluster := every
	noCluster.ClusterScope = false
	literalNS := every
	literalNS.Namespaces = []string{NamespaceEvery, "x"}
	literalVerb := every
	literalVerb.Verbs = []string{VerbAll, "get"}
	getOnly := NonResourcePolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{NonResourceAll}}
	colonSA := Subject{Kind: SubjectKindServiceAccount, ServiceAccount: &ServiceAccountSubject{Namespace: "a:b", Name: NameAll}}
	rules := map[string]PolicyRulesWithSubjects{
		"no-cluster":   {Subjects: []Subject{user("u")}, ResourceRules: []ResourcePolicyRule{noCluster}},
		"literal-ns":   {Subjects: []Subject{user("u")}, ResourceRules: []ResourcePolicyRule{literalNS}},
		"literal-verb": {Subjects: []Subject{user("u")}, ResourceRules: []ResourcePolicyRule{literalVerb}},
		"get-only":     {Subjects: []Subject{user("u")}, NonResourceRules: []NonResourcePolicyRule{getOnly}},
		"colon-sa":     {Subjects: []Subject{colonSA}, ResourceRules: []ResourcePolicyRule{every}, NonResourceRules: []NonResourcePolicyRule{allNonResources()}},
	}
	reqs := []Request{
		{User: "u", Groups: authenticated, Verb: "list", Resource: "nodes", ResourceRequest: true},
		{User: "u", Groups: authenticated, Verb: "list", Resource: "pods", Namespace: "ns1", ResourceRequest: true},
		{User: "u", Groups: authenticated, Verb: "get", Resource: "pods", Namespace: "x", ResourceRequest: true},
		{User: "u", Groups: authenticated, Verb: "post", Path: "/x"},
		{User: "u", Groups: authenticated, Verb: "get", Path: "/x"},
		{User: "system:serviceaccount:a:b:c", Groups: authenticated, Verb: "get", Path: "/x"},
		{User: "system:serviceaccount:a:c", Groups: authenticated, Verb: "get", Path: "/x"},
	}
	for name, rule := range rules {
		cfg := DefaultConfig()
		cfg.FlowSchemas = append(cfg.FlowSchemas, newFS(name, "workload-low", 100, DistinguisherByUser, rule))
		c, err := Compile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range reqs {
			d := c.Classify(&req)
			schema, ruleIdx := referenceClassify(c, &req)
			if d.SchemaIndex != schema || d.Rule != ruleIdx {
				t.Errorf("%s: Classify(%+v) = schema %d rule %d, reference says %d, %d", name, req, d.SchemaIndex, d.Rule, schema, ruleIdx)
			}
		}
	}
}

// Two FlowSchemas of equal precedence that match the same requests: the
// one whose name sorts first wins, as upstream orders them, whatever the
// order of the configuration.
func TestPrecedenceTieByName(t *testing.T) {
	fs := func(name, level string) FlowSchema {
		return FlowSchema{ObjectMeta: ObjectMeta{Name: name}, Spec: FlowSchemaSpec{
			PriorityLevelConfiguration: PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         500,
			Rules: []PolicyRulesWithSubjects{{
				Subjects:      []Subject{{Kind: SubjectKindGroup, Group: &GroupSubject{Name: "dev"}}},
				ResourceRules: []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
			}},
		}}
	}
	levels := []PriorityLevelConfiguration{SuggestedPriorityLevels()[0], SuggestedPriorityLevels()[1]}
	req := &Request{User: "u", Groups: []string{"dev"}, Verb: "get", Resource: "pods", Namespace: "ns", ResourceRequest: true}
	for _, order := range [][2]string{{"alpha", "beta"}, {"beta", "alpha"}} {
		cfg := &Config{PriorityLevels: levels}
		for _, name := range order {
			level := levels[0].Name
			if name == "beta" {
				level = levels[1].Name
			}
			cfg.FlowSchemas = append(cfg.FlowSchemas, fs(name, level))
		}
		c, err := Compile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d := c.Classify(req); d.FlowSchema != "alpha" || d.PriorityLevel != levels[0].Name {
			t.Errorf("Classify with FlowSchemas in order %v = %s/%s, want alpha/%s", order, d.FlowSchema, d.PriorityLevel, levels[0].Name)
		}
	}
}

// FlowSchemas hands out a copy: changing it changes neither a later
// FlowSchemas nor the Classifier's decisions.
func TestFlowSchemasIsACopy(t *testing.T) {
	c, err := Compile(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{User: "u", Groups: []string{"system:authenticated"}, Verb: "get", Resource: "pods", Namespace: "ns", ResourceRequest: true}
	before := c.Classify(req)
	got := c.FlowSchemas()
	want := got[0].Name
	for i := range got {
		got[i].Name = "changed"
		got[i].Spec.MatchingPrecedence = 1
	}
	slices.Reverse(got)
	if name := c.FlowSchemas()[0].Name; name != want {
		t.Errorf("FlowSchemas()[0].Name after changing an earlier result = %q, want %q", name, want)
	}
	if diff := cmp.Diff(before, c.Classify(req)); diff != "" {
		t.Errorf("Classify after changing FlowSchemas' result (-before +after):\n%s", diff)
	}
}
