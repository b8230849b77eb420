package flowschemacompare

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/fairslice/fairslice/flowschema"
)

// Random configurations and requests over small vocabularies, so that
// rules, wildcards and requests collide often. Everything generated is
// something upstream's controller accepts without crashing: levels are
// well-formed or broken only in ways upstream ignores (name/type
// mismatch, an entropy the dealer rejects), and distinguisher methods are
// valid.
var (
	users      = []string{"alice", "bob", "system:serviceaccount:ns1:sa1", "system:serviceaccount:ns1:sa2", "system:serviceaccount:kube-system:x", "system:node:n1", "system:kube-scheduler", "*"}
	groups     = []string{"system:authenticated", "system:unauthenticated", "system:nodes", "system:serviceaccounts", "system:masters", "dev", "*"}
	namespaces = []string{"ns1", "ns2", "kube-system", "*"}
	verbs      = []string{"get", "list", "watch", "create", "update", "patch", "delete", "*"}
	apiGroups  = []string{"", "apps", "coordination.k8s.io", "*"}
	resources  = []string{"pods", "pods/log", "nodes", "nodes/status", "leases", "deployments", "*"}
	urls       = []string{"/healthz", "/healthz/*", "/readyz", "/apis", "/apis/", "/apis/*", "/", "*", "/hea", "/metrics"}
	paths      = []string{"/healthz", "/healthz/etcd", "/healthzx", "/readyz", "/apis", "/apis/apps", "/metrics", "/", "/hea", "/api/v1/pods", "/livez"}
	levelNames = []string{"exempt", "catch-all", "l1", "l2", "l3", "l4", "missing"}
)

type gen struct{ r *rand.Rand }

func (g gen) pick(l []string) string { return l[g.r.IntN(len(l))] }

func (g gen) subset(l []string, max int) []string {
	n := g.r.IntN(max + 1)
	var out []string
	for range n {
		v := g.pick(l)
		if !contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func contains(l []string, v string) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

func (g gen) subject() flowschema.Subject {
	switch g.r.IntN(10) {
	case 0, 1, 2:
		return flowschema.Subject{Kind: "User", User: &flowschema.UserSubject{Name: g.pick(users)}}
	case 3, 4, 5, 6:
		return flowschema.Subject{Kind: "Group", Group: &flowschema.GroupSubject{Name: g.pick(groups)}}
	default:
		return flowschema.Subject{Kind: "ServiceAccount", ServiceAccount: &flowschema.ServiceAccountSubject{
			Namespace: g.pick([]string{"ns1", "kube-system", "ns"}), Name: g.pick([]string{"sa1", "x", "*"})}}
	}
}

func (g gen) rule() flowschema.PolicyRulesWithSubjects {
	var r flowschema.PolicyRulesWithSubjects
	for range 1 + g.r.IntN(3) {
		r.Subjects = append(r.Subjects, g.subject())
	}
	for range g.r.IntN(3) {
		r.ResourceRules = append(r.ResourceRules, flowschema.ResourcePolicyRule{
			Verbs: g.subset(verbs, 3), APIGroups: g.subset(apiGroups, 2), Resources: g.subset(resources, 3),
			Namespaces: g.subset(namespaces, 2), ClusterScope: g.r.IntN(2) == 0,
		})
	}
	for range g.r.IntN(2) {
		r.NonResourceRules = append(r.NonResourceRules, flowschema.NonResourcePolicyRule{Verbs: g.subset(verbs, 2), NonResourceURLs: g.subset(urls, 3)})
	}
	return r
}

func (g gen) level(name string) flowschema.PriorityLevelConfiguration {
	pl := flowschema.PriorityLevelConfiguration{ObjectMeta: flowschema.ObjectMeta{Name: name}}
	shares := flowschema.Int32(int32(1 + g.r.IntN(100)))
	lendable := flowschema.Int32(int32(g.r.IntN(101)))
	var borrowing *int32
	if g.r.IntN(2) == 0 {
		borrowing = flowschema.Int32(int32(g.r.IntN(300)))
	}
	switch k := g.r.IntN(10); {
	case name == "exempt" || k == 0 && name != "catch-all":
		// Exempt type: valid only under the name exempt; otherwise
		// upstream ignores the level.
		pl.Spec = flowschema.PriorityLevelConfigurationSpec{Type: "Exempt", Exempt: &flowschema.ExemptPriorityLevelConfiguration{
			NominalConcurrencyShares: flowschema.Int32(int32(g.r.IntN(20))), LendablePercent: lendable}}
	case k <= 2:
		pl.Spec = flowschema.PriorityLevelConfigurationSpec{Type: "Limited", Limited: &flowschema.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: shares, LendablePercent: lendable, BorrowingLimitPercent: borrowing,
			LimitResponse: flowschema.LimitResponse{Type: "Reject"}}}
	default:
		queues := []int32{1, 2, 16, 64, 128, 512}[g.r.IntN(6)]
		hand := min(queues, int32(1+g.r.IntN(9)))
		pl.Spec = flowschema.PriorityLevelConfigurationSpec{Type: "Limited", Limited: &flowschema.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: shares, LendablePercent: lendable, BorrowingLimitPercent: borrowing,
			LimitResponse: flowschema.LimitResponse{Type: "Queue", Queuing: &flowschema.QueuingConfiguration{
				Queues: queues, HandSize: hand, QueueLengthLimit: int32(1 + g.r.IntN(100))}}}}
	}
	return pl
}

// config draws a configuration: a random subset of the bootstrap objects,
// random levels and up to maxSchemas random FlowSchemas.
func (g gen) config(maxSchemas int) *flowschema.Config {
	cfg := &flowschema.Config{}
	def := flowschema.DefaultConfig()
	for _, pl := range def.PriorityLevels {
		if g.r.IntN(4) > 0 {
			cfg.PriorityLevels = append(cfg.PriorityLevels, pl)
		}
	}
	for _, fs := range def.FlowSchemas {
		if g.r.IntN(4) > 0 {
			cfg.FlowSchemas = append(cfg.FlowSchemas, fs)
		}
	}
	have := map[string]bool{}
	for _, pl := range cfg.PriorityLevels {
		have[pl.Name] = true
	}
	for _, name := range levelNames[:6] {
		if !have[name] && g.r.IntN(3) == 0 {
			cfg.PriorityLevels = append(cfg.PriorityLevels, g.level(name))
		}
	}
	n := g.r.IntN(maxSchemas + 1)
	for i := range n {
		fs := flowschema.FlowSchema{ObjectMeta: flowschema.ObjectMeta{Name: fmt.Sprintf("fs-%03d", i)}}
		fs.Spec.PriorityLevelConfiguration.Name = g.pick(levelNames)
		fs.Spec.MatchingPrecedence = int32(2 + g.r.IntN(9998))
		if g.r.IntN(4) == 0 {
			fs.Spec.MatchingPrecedence = int32(100 * (1 + g.r.IntN(5))) // ties
		}
		switch g.r.IntN(3) {
		case 1:
			fs.Spec.DistinguisherMethod = &flowschema.FlowDistinguisherMethod{Type: "ByUser"}
		case 2:
			fs.Spec.DistinguisherMethod = &flowschema.FlowDistinguisherMethod{Type: "ByNamespace"}
		}
		for range g.r.IntN(3) {
			fs.Spec.Rules = append(fs.Spec.Rules, g.rule())
		}
		cfg.FlowSchemas = append(cfg.FlowSchemas, fs)
		if g.r.IntN(3) == 0 {
			// A twin: same precedence and rules, another level, a name
			// sorting after; only the tie-break by name tells them apart.
			twin := *fs.DeepCopy()
			twin.Name += "-twin"
			for twin.Spec.PriorityLevelConfiguration.Name == fs.Spec.PriorityLevelConfiguration.Name {
				twin.Spec.PriorityLevelConfiguration.Name = g.pick(levelNames)
			}
			cfg.FlowSchemas = append(cfg.FlowSchemas, twin)
		}
	}
	g.r.Shuffle(len(cfg.FlowSchemas), func(i, j int) { cfg.FlowSchemas[i], cfg.FlowSchemas[j] = cfg.FlowSchemas[j], cfg.FlowSchemas[i] })
	return cfg
}

func (g gen) request() flowschema.Request {
	req := flowschema.Request{
		User:   g.pick(append(users[:7:7], "system:serviceaccount:ns:y", "system:kube-controller-manager", "system:anonymous")),
		Groups: g.subset(groups[:6], 3),
		Verb:   g.pick(verbs[:7]),
	}
	if g.r.IntN(4) > 0 {
		req.ResourceRequest = true
		req.APIGroup = g.pick(apiGroups[:3])
		req.Resource, req.Subresource, _ = strings.Cut(g.pick(resources[:6]), "/")
		req.Namespace = g.pick([]string{"ns1", "ns2", "kube-system", ""})
		if g.r.IntN(2) == 0 {
			req.Name = "obj"
		}
	} else {
		req.Path = g.pick(paths)
	}
	return req
}
