package flowschema

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// want is one expected error: its type, field path and detail.
type want struct {
	Type   ErrorType
	Field  string
	Detail string
}

func got(l ErrorList) []want {
	out := make([]want, len(l))
	for i, e := range l {
		out[i] = want{e.Type, e.Field, e.Detail}
	}
	return out
}

// sameErrors compares as upstream's assert.ElementsMatch does (any order).
func sameErrors(t *testing.T, name string, l ErrorList, w []want) {
	t.Helper()
	g := got(l)
	less := func(a, b want) int { return strings.Compare(a.Field+a.Detail, b.Field+b.Detail) }
	slices.SortFunc(g, less)
	w = slices.Clone(w)
	slices.SortFunc(w, less)
	if diff := cmp.Diff(w, g, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s: errors mismatch (-want +got):\n%s", name, diff)
	}
}

func rulesFS(name string, prec int32, rules ...PolicyRulesWithSubjects) *FlowSchema {
	return &FlowSchema{ObjectMeta: ObjectMeta{Name: name}, Spec: FlowSchemaSpec{
		MatchingPrecedence: prec, PriorityLevelConfiguration: PriorityLevelConfigurationReference{Name: "system-bar"}, Rules: rules}}
}

func oneRule(subjects []Subject, rr []ResourcePolicyRule, nr []NonResourcePolicyRule) PolicyRulesWithSubjects {
	return PolicyRulesWithSubjects{Subjects: subjects, ResourceRules: rr, NonResourceRules: nr}
}

var (
	anyRR = []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}}}
	users = []Subject{user("noxu")}
)

const sub0 = "spec.rules[0].subjects[0]"
const rr0 = "spec.rules[0].resourceRules[0]"

// TestValidateFlowSchemaUpstreamCases reproduces the expectations of
// upstream's TestFlowSchemaValidation (k8s.io/kubernetes v1.37.2
// pkg/apis/flowcontrol/validation/validation_test.go).
func TestValidateFlowSchemaUpstreamCases(t *testing.T) {
	badExempt := mandatoryFSExempt()
	badExempt.Spec.Rules[0].NonResourceRules[0].NonResourceURLs = []string{"/"}
	badCatchAll := mandatoryFSCatchAll()
	badCatchAll.Spec.Rules[0].NonResourceRules[0].NonResourceURLs = []string{"/"}
	exempt, catchAll := mandatoryFSExempt(), mandatoryFSCatchAll()
	tests := []struct {
		name string
		fs   *FlowSchema
		want []want
	}{
		{"missing both resource and non-resource policy-rule should fail",
			rulesFS("system-foo", 50, oneRule(users, nil, nil)),
			[]want{{ErrorTypeRequired, "spec.rules[0]", "at least one of resourceRules and nonResourceRules has to be non-empty"}}},
		{"normal flow-schema w/ * verbs/apiGroups/resources should work",
			rulesFS("system-foo", 50, oneRule(users, anyRR, nil)), nil},
		{"malformed Subject union in ServiceAccount case",
			rulesFS("system-foo", 50, oneRule([]Subject{{Kind: SubjectKindServiceAccount, User: &UserSubject{Name: "fred"}, Group: &GroupSubject{Name: "fred"}}}, anyRR, nil)),
			[]want{
				{ErrorTypeRequired, sub0 + ".serviceAccount", "serviceAccount is required when subject kind is 'ServiceAccount'"},
				{ErrorTypeForbidden, sub0 + ".user", "user is forbidden when subject kind is not 'User'"},
				{ErrorTypeForbidden, sub0 + ".group", "group is forbidden when subject kind is not 'Group'"},
			}},
		{"Subject union malformed in User case",
			rulesFS("system-foo", 50, oneRule([]Subject{{Kind: SubjectKindUser, ServiceAccount: &ServiceAccountSubject{Namespace: "s", Name: "n"}, Group: &GroupSubject{Name: "fred"}}}, anyRR, nil)),
			[]want{
				{ErrorTypeForbidden, sub0 + ".serviceAccount", "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"},
				{ErrorTypeRequired, sub0 + ".user", "user is required when subject kind is 'User'"},
				{ErrorTypeForbidden, sub0 + ".group", "group is forbidden when subject kind is not 'Group'"},
			}},
		{"malformed Subject union in Group case",
			rulesFS("system-foo", 50, oneRule([]Subject{{Kind: SubjectKindGroup, ServiceAccount: &ServiceAccountSubject{Namespace: "s", Name: "n"}, User: &UserSubject{Name: "fred"}}}, anyRR, nil)),
			[]want{
				{ErrorTypeForbidden, sub0 + ".serviceAccount", "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"},
				{ErrorTypeForbidden, sub0 + ".user", "user is forbidden when subject kind is not 'User'"},
				{ErrorTypeRequired, sub0 + ".group", "group is required when subject kind is 'Group'"},
			}},
		{"exempt flow-schema should work", &exempt, nil},
		{"bad exempt flow-schema should fail", &badExempt, []want{{ErrorTypeInvalid, "spec", "spec of 'exempt' must equal the fixed value"}}},
		{"bad catch-all flow-schema should fail", &badCatchAll, []want{{ErrorTypeInvalid, "spec", "spec of 'catch-all' must equal the fixed value"}}},
		{"catch-all flow-schema should work", &catchAll, nil},
		{"non-exempt flow-schema with matchingPrecedence==1 should fail",
			rulesFS("system-foo", 1, oneRule(users, anyRR, nil)),
			[]want{{ErrorTypeInvalid, "spec.matchingPrecedence", "only the schema named 'exempt' may have matchingPrecedence 1"}}},
		{"flow-schema mixes * verbs/apiGroups/resources should fail",
			rulesFS("system-foo", 50, oneRule(users, []ResourcePolicyRule{{Verbs: []string{"*", "create"}, APIGroups: []string{"*", "tak"}, Resources: []string{"*", "tok"}, Namespaces: []string{"*"}}}, nil)),
			[]want{
				{ErrorTypeInvalid, rr0 + ".verbs", "if '*' is present, must not specify other verbs"},
				{ErrorTypeInvalid, rr0 + ".apiGroups", "if '*' is present, must not specify other api groups"},
				{ErrorTypeInvalid, rr0 + ".resources", "if '*' is present, must not specify other resources"},
			}},
		{"flow-schema has both resource rules and non-resource rules should work",
			rulesFS("system-foo", 50, oneRule(users, anyRR, []NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"/apis/*"}}})), nil},
		{"flow-schema mixes * non-resource URLs should fail",
			rulesFS("system-foo", 50, oneRule(users, nil, []NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*", "tik"}}})),
			[]want{{ErrorTypeInvalid, "spec.rules[0].nonResourceRules[0].nonResourceURLs", "if '*' is present, must not specify other non-resource URLs"}}},
		{"invalid subject kind should fail",
			rulesFS("system-foo", 50, oneRule([]Subject{{Kind: "FooKind"}}, anyRR, nil)),
			[]want{{ErrorTypeNotSupported, sub0 + ".kind", ""}}},
		{"flow-schema w/ invalid verb should fail",
			rulesFS("system-foo", 50, oneRule(users, []ResourcePolicyRule{{Verbs: []string{"feed"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}}}, nil)),
			[]want{{ErrorTypeNotSupported, rr0 + ".verbs", ""}}},
		{"flow-schema w/ invalid priority level configuration name should fail",
			func() *FlowSchema {
				fs := rulesFS("system-foo", 50, oneRule(users, anyRR, nil))
				fs.Spec.PriorityLevelConfiguration.Name = "system+++$$"
				return fs
			}(),
			[]want{{ErrorTypeInvalid, "spec.priorityLevelConfiguration.name", `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}}},
		{"flow-schema w/ service-account kind missing namespace should fail",
			rulesFS("system-foo", 50, oneRule([]Subject{{Kind: SubjectKindServiceAccount, ServiceAccount: &ServiceAccountSubject{Name: "noxu"}}}, anyRR, nil)),
			[]want{{ErrorTypeRequired, sub0 + ".serviceAccount.namespace", "must specify namespace for service account"}}},
		{"flow-schema missing kind should fail",
			rulesFS("system-foo", 50, oneRule([]Subject{{Kind: ""}}, anyRR, nil)),
			[]want{{ErrorTypeNotSupported, sub0 + ".kind", ""}}},
		{"Omitted ResourceRule.Namespaces should fail",
			rulesFS("system-foo", 50, oneRule(users, []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}, nil)),
			[]want{{ErrorTypeRequired, rr0 + ".namespaces", "resource rules that are not cluster scoped must supply at least one namespace"}}},
		{"ClusterScope is allowed, with no Namespaces",
			rulesFS("system-foo", 50, oneRule(users, []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true}}, nil)), nil},
		{"ClusterScope is allowed with NamespaceEvery",
			rulesFS("system-foo", 50, oneRule(users, []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"}}}, nil)), nil},
		{"NamespaceEvery may not be combined with particulars",
			rulesFS("system-foo", 50, oneRule(users, []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"foo", "*"}}}, nil)),
			[]want{{ErrorTypeInvalid, rr0 + ".namespaces", "if '*' is present, must not specify other namespaces"}}},
		{"ResourceRule.Namespaces must be well formed",
			rulesFS("system-foo", 50, oneRule(users, []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"-foo"}}}, nil)),
			[]want{{ErrorTypeInvalid, rr0 + ".namespaces[0]", "each member of this list must be '*' or a DNS-1123 label; " + `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`}}},
		{"MatchingPrecedence must not be greater than 10000",
			rulesFS("system-foo", 10001, oneRule(users, anyRR, nil)),
			[]want{{ErrorTypeInvalid, "spec.matchingPrecedence", "must not be greater than 10000"}}},
		{"duplicate status condition type",
			func() *FlowSchema {
				fs := rulesFS("system-foo", 50, oneRule(users, anyRR, nil))
				fs.Status.Conditions = []Condition{{Type: "1"}, {Type: "1"}, {}}
				return fs
			}(),
			[]want{{ErrorTypeDuplicate, "status.conditions[1].type", ""}, {ErrorTypeRequired, "status.conditions[2].type", ""}}},
	}
	for _, tt := range tests {
		sameErrors(t, tt.name, ValidateFlowSchema(tt.fs), tt.want)
	}
}

func limitedPL(name string, shares int32, lr LimitResponse) *PriorityLevelConfiguration {
	return &PriorityLevelConfiguration{ObjectMeta: ObjectMeta{Name: name}, Spec: PriorityLevelConfigurationSpec{
		Type: PriorityLevelTypeLimited, Limited: &LimitedPriorityLevelConfiguration{NominalConcurrencyShares: Int32(shares), LimitResponse: lr}}}
}

func queuing(queues, hand, qll int32) LimitResponse {
	return LimitResponse{Type: LimitResponseQueue, Queuing: &QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: qll}}
}

// TestValidatePriorityLevelUpstreamCases reproduces upstream's
// TestPriorityLevelConfigurationValidation and the limited-level tests.
func TestValidatePriorityLevelUpstreamCases(t *testing.T) {
	reject := LimitResponse{Type: LimitResponseReject}
	badSpec := PriorityLevelConfigurationSpec{Type: PriorityLevelTypeLimited,
		Limited: &LimitedPriorityLevelConfiguration{NominalConcurrencyShares: Int32(42), LimitResponse: reject}}
	withSpec := func(name string, s PriorityLevelConfigurationSpec) *PriorityLevelConfiguration {
		return &PriorityLevelConfiguration{ObjectMeta: ObjectMeta{Name: name}, Spec: s}
	}
	exemptSpec := func(ncs, lp int32) PriorityLevelConfigurationSpec {
		return PriorityLevelConfigurationSpec{Type: PriorityLevelTypeExempt,
			Exempt: &ExemptPriorityLevelConfiguration{NominalConcurrencyShares: Int32(ncs), LendablePercent: Int32(lp)}}
	}
	repurposed := badSpec
	repurposed.Exempt = &ExemptPriorityLevelConfiguration{}
	badExempt3 := PriorityLevelConfigurationSpec{Type: PriorityLevelTypeExempt, Exempt: &ExemptPriorityLevelConfiguration{}, Limited: badSpec.Limited}
	const q = "spec.limited.limitResponse.queuing"
	tests := []struct {
		name string
		pl   *PriorityLevelConfiguration
		want []want
	}{
		{"exempt should work", withSpec("exempt", exemptSpec(0, 0)), nil},
		{"wrong exempt spec should fail", withSpec("exempt", badSpec), []want{
			{ErrorTypeInvalid, "spec.type", "must be 'Exempt' if and only if `name` is 'exempt'"},
			{ErrorTypeInvalid, "spec", "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"}}},
		{"exempt priority level should have appropriate values for Exempt field", withSpec("exempt", exemptSpec(-1, 101)), []want{
			{ErrorTypeInvalid, "spec.exempt.nominalConcurrencyShares", "must be a non-negative integer"},
			{ErrorTypeInvalid, "spec.exempt.lendablePercent", "must be between 0 and 100, inclusive"}}},
		{"exempt priority level should have appropriate values for Exempt field 2", withSpec("exempt", exemptSpec(-1, -1)), []want{
			{ErrorTypeInvalid, "spec.exempt.nominalConcurrencyShares", "must be a non-negative integer"},
			{ErrorTypeInvalid, "spec.exempt.lendablePercent", "must be between 0 and 100, inclusive"}}},
		{"admins are not allowed to repurpose the 'exempt' pl to a limited type", withSpec("exempt", repurposed), []want{
			{ErrorTypeInvalid, "spec.type", "must be 'Exempt' if and only if `name` is 'exempt'"},
			{ErrorTypeForbidden, "spec.exempt", "must be nil if the type is Limited"},
			{ErrorTypeInvalid, "spec", "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"}}},
		{"admins are not allowed to change any field of the 'exempt' pl except 'Exempt'", withSpec("exempt", badExempt3), []want{
			{ErrorTypeInvalid, "spec", "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"},
			{ErrorTypeForbidden, "spec.limited", "must be nil if the type is not Limited"}}},
		{"admins are allowed to change the Exempt field of the 'exempt' pl", withSpec("exempt", exemptSpec(10, 10)), nil},
		{"limited must not set exempt priority level configuration for borrowing",
			withSpec("broken-limited", PriorityLevelConfigurationSpec{Type: PriorityLevelTypeLimited, Exempt: &ExemptPriorityLevelConfiguration{}}), []want{
				{ErrorTypeForbidden, "spec.exempt", "must be nil if the type is Limited"},
				{ErrorTypeRequired, "spec.limited", "must not be empty when type is Limited"}}},
		{"limited requires more details", withSpec("broken-limited", PriorityLevelConfigurationSpec{Type: PriorityLevelTypeLimited}),
			[]want{{ErrorTypeRequired, "spec.limited", "must not be empty when type is Limited"}}},
		{"max-in-flight should work", limitedPL("max-in-flight", 42, reject), nil},
		{"forbid queuing details when not queuing", limitedPL("system-foo", 100, LimitResponse{Type: LimitResponseReject, Queuing: &QueuingConfiguration{Queues: 512, HandSize: 4, QueueLengthLimit: 100}}),
			[]want{{ErrorTypeForbidden, q, "must be nil if limited.limitResponse.type is not Limited"}}},
		{"wrong backstop spec should fail", withSpec("catch-all", badSpec), []want{{ErrorTypeInvalid, "spec", "spec of 'catch-all' must equal the fixed value"}}},
		{"backstop should work", withSpec("catch-all", mandatoryPLCatchAll().Spec), nil},
		{"broken queuing level should fail", limitedPL("system-foo", 100, LimitResponse{Type: LimitResponseQueue}),
			[]want{{ErrorTypeRequired, q, "must not be empty if limited.limitResponse.type is Limited"}}},
		{"normal customized priority level should work", limitedPL("system-foo", 100, queuing(512, 4, 100)), nil},
		{"overflowing handSize/queues should fail 1", limitedPL("system-foo", 100, queuing(512, 8, 100)),
			[]want{{ErrorTypeInvalid, q + ".handSize", "required entropy bits of deckSize 512 and handSize 8 should not be greater than 60"}}},
		{"overflowing handSize/queues should fail 2", limitedPL("system-foo", 100, queuing(128, 10, 100)),
			[]want{{ErrorTypeInvalid, q + ".handSize", "required entropy bits of deckSize 128 and handSize 10 should not be greater than 60"}}},
		{"overflowing handSize/queues should fail 3", limitedPL("system-foo", 100, queuing(math.MaxInt32, 3, 100)), []want{
			{ErrorTypeInvalid, q + ".handSize", "required entropy bits of deckSize 2147483647 and handSize 3 should not be greater than 60"},
			{ErrorTypeInvalid, q + ".queues", "must not be greater than 10000000"}}},
		{"handSize=2 and queues=10^7 should work", limitedPL("system-foo", 100, queuing(10_000_000, 2, 100)), nil},
		{"handSize greater than queues should fail", limitedPL("system-foo", 100, queuing(7, 8, 100)),
			[]want{{ErrorTypeInvalid, q + ".handSize", "should not be greater than queues (7)"}}},
		{"the roundtrip annotation is forbidden", func() *PriorityLevelConfiguration {
			pl := limitedPL("with-forbidden-annotation", 42, reject)
			pl.Annotations = map[string]string{PreserveZeroSharesAnnotation: ""}
			return pl
		}(), []want{{ErrorTypeForbidden, "metadata.annotations", "annotation '" + PreserveZeroSharesAnnotation + "' is forbidden"}}},
		{"spec.type empty should fail with required", withSpec("system-foo", PriorityLevelConfigurationSpec{}),
			[]want{{ErrorTypeRequired, "spec.type", ""}}},
		{"spec.limited.limitResponse.type empty should fail with required", limitedPL("system-foo", 100, LimitResponse{}),
			[]want{{ErrorTypeRequired, "spec.limited.limitResponse.type", ""}}},
		// TestValidateLimitedPriorityLevelConfiguration(WithBorrowing).
		{"zero shares", limitedPL("a", 0, reject), nil},
		{"negative shares", limitedPL("a", -1, reject), []want{{ErrorTypeInvalid, "spec.limited.nominalConcurrencyShares", "must be a non-negative integer"}}},
		{"lendable 101 and borrowing -1", func() *PriorityLevelConfiguration {
			pl := limitedPL("a", 1, reject)
			pl.Spec.Limited.LendablePercent, pl.Spec.Limited.BorrowingLimitPercent = Int32(101), Int32(-1)
			return pl
		}(), []want{
			{ErrorTypeInvalid, "spec.limited.lendablePercent", "must be between 0 and 100, inclusive"},
			{ErrorTypeInvalid, "spec.limited.borrowingLimitPercent", "if specified, must be a non-negative integer"}}},
		{"lendable 100 and borrowing 0", func() *PriorityLevelConfiguration {
			pl := limitedPL("a", 1, reject)
			pl.Spec.Limited.LendablePercent, pl.Spec.Limited.BorrowingLimitPercent = Int32(100), Int32(0)
			return pl
		}(), nil},
	}
	for _, tt := range tests {
		sameErrors(t, tt.name, ValidatePriorityLevelConfiguration(tt.pl), tt.want)
	}
}

// TestNonResourceURLPath reproduces upstream's TestValidateNonResourceURLPath.
func TestNonResourceURLPath(t *testing.T) {
	for _, tt := range []struct {
		path string
		bad  bool
	}{
		{"", true}, {"foo", true}, {"/", false}, {"//", true}, {"/foo", false}, {"/////", true}, {"/apis/", false},
		{"/healthz/*", false}, {"/healthz/*/foo", true}, {"/healthz/foo bar", true}, {"/health*", true},
		{"/health*/foo", true}, {"/*/*", true},
	} {
		if got := nonResourceURLProblem(tt.path); (got != "") != tt.bad {
			t.Errorf("nonResourceURLProblem(%q) = %q, want a problem: %v", tt.path, got, tt.bad)
		}
	}
}

func TestValidateDefaultConfig(t *testing.T) {
	if err := Validate(DefaultConfig()); err != nil {
		t.Errorf("Validate(DefaultConfig()) = %v, want nil", err)
	}
}

func TestValidateReportsEverything(t *testing.T) {
	cfg := &Config{
		FlowSchemas:    []FlowSchema{*rulesFS("Bad_Name", 20000, oneRule(nil, nil, nil)), *rulesFS("dup", 5, oneRule(users, anyRR, nil)), *rulesFS("dup", 5, oneRule(users, anyRR, nil))},
		PriorityLevels: []PriorityLevelConfiguration{*limitedPL("q", -3, queuing(7, 8, -1))},
	}
	err := Validate(cfg)
	l, ok := err.(ErrorList)
	if !ok {
		t.Fatalf("Validate = %v, want an ErrorList", err)
	}
	wantFields := []string{"metadata.name", "spec.matchingPrecedence", "spec.rules[0].subjects", "spec.rules[0]", "metadata.name",
		"spec.limited.nominalConcurrencyShares", "spec.limited.limitResponse.queuing.queueLengthLimit", "spec.limited.limitResponse.queuing.handSize"}
	if diff := cmp.Diff(wantFields, l.Fields()); diff != "" {
		t.Errorf("Validate fields mismatch (-want +got):\n%s\n%v", diff, err)
	}
	if !strings.Contains(err.Error(), `flowschema: FlowSchema "Bad_Name": spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000`) {
		t.Errorf("Validate error text lacks the object, path, value and detail:\n%v", err)
	}
}
