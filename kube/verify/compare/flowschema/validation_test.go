package flowschemacompare

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/kube/verify/internal/upstreamvalidation"
)

// mutateFS breaks a FlowSchema in a random way (or leaves it valid).
func (g gen) mutateFS(fs *flowschema.FlowSchema) {
	for range g.r.IntN(4) {
		spec := &fs.Spec
		rule := func() *flowschema.PolicyRulesWithSubjects {
			if len(spec.Rules) == 0 {
				spec.Rules = append(spec.Rules, g.rule())
			}
			return &spec.Rules[g.r.IntN(len(spec.Rules))]
		}
		switch g.r.IntN(22) {
		case 0:
			fs.Name = g.pick([]string{"", "Bad_Name", "-x", "a.b", strings.Repeat("a", 254), "ok"})
		case 1:
			spec.MatchingPrecedence = int32(g.pick2([]int{-1, 1, 10000, 10001, 0}))
		case 2:
			spec.DistinguisherMethod = &flowschema.FlowDistinguisherMethod{Type: g.pick([]string{"ByUser", "Bogus", ""})}
		case 3:
			spec.PriorityLevelConfiguration.Name = g.pick([]string{"", "UPPER", "ok-level", "a..b"})
		case 4:
			rule().Subjects = nil
		case 5:
			r := rule()
			r.ResourceRules, r.NonResourceRules = nil, nil
		case 6:
			rule().Subjects = append(rule().Subjects, flowschema.Subject{Kind: g.pick([]string{"User", "Group", "ServiceAccount", "Bogus", ""})})
		case 7:
			rule().Subjects = append(rule().Subjects, flowschema.Subject{Kind: "User", User: &flowschema.UserSubject{}, Group: &flowschema.GroupSubject{Name: "g"}})
		case 8:
			rule().Subjects = append(rule().Subjects, flowschema.Subject{Kind: "ServiceAccount", ServiceAccount: &flowschema.ServiceAccountSubject{
				Namespace: g.pick([]string{"", "Bad_NS", "ns1", "a.b"}), Name: g.pick([]string{"", "*", "Bad Name", "sa"})}, User: &flowschema.UserSubject{Name: "u"}})
		case 9:
			rule().Subjects = append(rule().Subjects, flowschema.Subject{Kind: "Group", Group: &flowschema.GroupSubject{}})
		case 10, 11:
			r := rule()
			r.ResourceRules = append(r.ResourceRules, flowschema.ResourcePolicyRule{
				Verbs: g.subset(append(verbs, "feed", "*"), 3), APIGroups: g.subset(append(apiGroups, "*"), 2),
				Resources: g.subset(append(resources, "*"), 3), Namespaces: g.subset(append(namespaces, "-bad", "Bad", "*", ""), 2),
				ClusterScope: g.r.IntN(2) == 0})
		case 12, 13:
			r := rule()
			r.NonResourceRules = append(r.NonResourceRules, flowschema.NonResourcePolicyRule{
				Verbs:           g.subset(append(verbs, "post", "*"), 2),
				NonResourceURLs: g.subset(append(urls, "", "foo", "//x", "/a b", "/x/*/y", "/he*", "/*/*", "*"), 3)})
		case 14:
			fs.Status.Conditions = append(fs.Status.Conditions, flowschema.Condition{Type: g.pick([]string{"", "Dangling", "Dangling"})})
		case 15:
			fs.Namespace = "ns"
		case 16:
			fs.Labels = map[string]string{g.pick([]string{"ok", "Bad Key", "a/b/c", "example.com/x"}): g.pick([]string{"v", "bad value", ""})}
		case 17:
			fs.Annotations = map[string]string{g.pick([]string{"ok", "Bad Key", "/x", "EXAMPLE.com/X"}): "v"}
		case 18:
			*fs = mandatory(g.pick([]string{"exempt", "catch-all"}))
			if g.r.IntN(2) == 0 {
				fs.Spec.MatchingPrecedence++
			}
		case 19:
			fs.Name = g.pick([]string{"exempt", "catch-all"})
		case 20:
			fs.GenerateName = g.pick([]string{"gen-", "Bad-"})
		case 21:
			fs.Generation = -1
		}
	}
}

func (g gen) pick2(l []int) int { return l[g.r.IntN(len(l))] }

func mandatory(name string) flowschema.FlowSchema {
	for _, fs := range flowschema.MandatoryFlowSchemas() {
		if fs.Name == name {
			return fs
		}
	}
	panic(name)
}

// mutatePL breaks a priority level in a random way (or leaves it valid).
func (g gen) mutatePL(pl *flowschema.PriorityLevelConfiguration) {
	for range g.r.IntN(4) {
		s := &pl.Spec
		switch g.r.IntN(16) {
		case 0:
			pl.Name = g.pick([]string{"", "Bad_Name", "exempt", "catch-all", "ok"})
		case 1:
			s.Type = g.pick([]string{"", "Bogus", "Exempt", "Limited"})
		case 2:
			s.Exempt = &flowschema.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: flowschema.Int32(int32(g.r.IntN(5) - 2)),
				LendablePercent: flowschema.Int32(int32(g.pick2([]int{-1, 0, 50, 100, 101})))}
		case 3:
			s.Limited = nil
		case 4, 5:
			if s.Limited == nil {
				s.Limited = &flowschema.LimitedPriorityLevelConfiguration{}
			}
			s.Limited.NominalConcurrencyShares = flowschema.Int32(int32(g.pick2([]int{-1, 0, 5, 30})))
			s.Limited.LendablePercent = flowschema.Int32(int32(g.pick2([]int{-1, 0, 50, 100, 101})))
			if g.r.IntN(2) == 0 {
				s.Limited.BorrowingLimitPercent = flowschema.Int32(int32(g.pick2([]int{-1, 0, 500})))
			}
		case 6, 7:
			if s.Limited == nil {
				s.Limited = &flowschema.LimitedPriorityLevelConfiguration{}
			}
			s.Limited.LimitResponse.Type = g.pick([]string{"", "Queue", "Reject", "Bogus"})
		case 8, 9, 10:
			if s.Limited == nil {
				s.Limited = &flowschema.LimitedPriorityLevelConfiguration{}
			}
			s.Limited.LimitResponse.Queuing = &flowschema.QueuingConfiguration{
				Queues:           int32(g.pick2([]int{-1, 0, 1, 7, 64, 512, 10_000_000, 10_000_001})),
				HandSize:         int32(g.pick2([]int{-1, 0, 1, 2, 6, 8, 9, 16})),
				QueueLengthLimit: int32(g.pick2([]int{-1, 0, 50})),
			}
		case 11:
			pl.Annotations = map[string]string{g.pick([]string{"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares", "ok"}): ""}
		case 12:
			pl.Status.Conditions = append(pl.Status.Conditions, flowschema.Condition{Type: g.pick([]string{"", "X", "X"})})
		case 13:
			for _, m := range flowschema.MandatoryPriorityLevels() {
				if g.r.IntN(2) == 0 {
					*pl = m
				}
			}
		case 14:
			pl.Namespace = "ns"
		case 15:
			s.Limited, s.Exempt = nil, nil
		}
	}
}

type verr struct{ Type, Field, Detail string }

func normalize(l []verr) []verr {
	for i := range l {
		if l[i].Type == "Unsupported value" {
			l[i].Detail = "" // upstream puts the supported values in the detail
		}
		if strings.HasPrefix(l[i].Detail, "a lowercase RFC") || strings.Contains(l[i].Detail, "name part") ||
			strings.Contains(l[i].Detail, "prefix part") || strings.Contains(l[i].Detail, "a valid label") || strings.Contains(l[i].Detail, "qualified name") {
			l[i].Detail = "<name format>" // compared by path; wording of name checks may differ
		}
	}
	slices.SortFunc(l, func(a, b verr) int { return strings.Compare(a.Field+a.Type+a.Detail, b.Field+b.Type+b.Detail) })
	return l
}

func fromUpstream(l []upstreamvalidation.Error) []verr {
	out := []verr{}
	for _, e := range l {
		out = append(out, verr{e.Type, e.Field, e.Detail})
	}
	return normalize(out)
}

func fromOurs(l flowschema.ErrorList) []verr {
	out := []verr{}
	for _, e := range l {
		out = append(out, verr{string(e.Type), e.Field, e.Detail})
	}
	return normalize(out)
}

// TestValidationDifferential validates random valid and invalid objects
// with upstream's validation and with flowschema's: the same errors (type
// and field path; the detail too, except for the wording of name-format
// and unsupported-value messages).
func TestValidationDifferential(t *testing.T) {
	s := seed(t)
	g := gen{rand.New(rand.NewPCG(s, 0x7a1d))}
	n := 20 * *fsConfigs
	valid, invalid := 0, 0
	compare := func(k int, kind string, obj any, up []upstreamvalidation.Error, err error, ours flowschema.ErrorList) {
		if err != nil {
			t.Fatal(err)
		}
		want, got := fromUpstream(up), fromOurs(ours)
		if len(want) == 0 {
			valid++
		} else {
			invalid++
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("case %d %s %s: errors mismatch (-upstream +fairslice):\n%s", k, kind, dump(obj), diff)
		}
	}
	for k := range n {
		cfg := g.config(3)
		for i := range cfg.FlowSchemas {
			fs := &cfg.FlowSchemas[i]
			g.mutateFS(fs)
			d := fs.DeepCopy()
			d.SetDefaults() // the API server validates defaulted objects
			up, err := upstreamvalidation.ValidateFlowSchema(fs)
			compare(k, "FlowSchema", fs, up, err, flowschema.ValidateFlowSchema(d))
		}
		for i := range cfg.PriorityLevels {
			pl := &cfg.PriorityLevels[i]
			g.mutatePL(pl)
			d := pl.DeepCopy()
			d.SetDefaults()
			up, err := upstreamvalidation.ValidatePriorityLevelConfiguration(pl)
			compare(k, "PriorityLevelConfiguration", pl, up, err, flowschema.ValidatePriorityLevelConfiguration(d))
		}
		if t.Failed() {
			break
		}
	}
	t.Logf("%d valid and %d invalid objects agree", valid, invalid)
	if valid < 100 || invalid < 100 {
		t.Errorf("too few valid (%d) or invalid (%d) objects", valid, invalid)
	}
}

func dump(v any) string {
	var b strings.Builder
	cfg := &flowschema.Config{}
	switch o := v.(type) {
	case *flowschema.FlowSchema:
		cfg.FlowSchemas = []flowschema.FlowSchema{*o}
	case *flowschema.PriorityLevelConfiguration:
		cfg.PriorityLevels = []flowschema.PriorityLevelConfiguration{*o}
	}
	if err := cfg.Encode(&b); err != nil {
		return fmt.Sprint(err)
	}
	return "\n" + b.String()
}
