package flowschema

import (
	"fmt"
	"slices"
	"strings"

	"pgregory.net/rapid"
)

// referenceClassify is a plain transcription of upstream's classification
// (rule.go and the controller's scan), independent of the index and of
// match.go: it builds strings freely and scans everything.
func referenceClassify(c *Classifier, req *Request) (schema, rule int) {
	catchAll := -1
	for i := range c.schemas {
		fs := &c.schemas[i]
		for ri := range fs.Spec.Rules {
			if refRule(req, &fs.Spec.Rules[ri]) {
				return i, ri
			}
		}
		if fs.Name == FlowSchemaNameCatchAll && catchAll < 0 {
			catchAll = i
		}
	}
	return catchAll, -1
}

func refRule(req *Request, r *PolicyRulesWithSubjects) bool {
	subj := false
	for _, s := range r.Subjects {
		switch {
		case s.Kind == "User" && s.User != nil:
			subj = s.User.Name == "*" || s.User.Name == req.User
		case s.Kind == "Group" && s.Group != nil:
			subj = s.Group.Name == "*" || slices.Contains(req.Groups, s.Group.Name)
		case s.Kind == "ServiceAccount" && s.ServiceAccount != nil:
			prefix := "system:serviceaccount:" + s.ServiceAccount.Namespace + ":"
			if s.ServiceAccount.Name == "*" {
				subj = strings.HasPrefix(req.User, prefix)
			} else {
				subj = req.User == prefix+s.ServiceAccount.Name
			}
		}
		if subj {
			break
		}
	}
	if !subj {
		return false
	}
	contains := func(list []string, x, wild string) bool {
		return len(list) == 1 && list[0] == wild || slices.Contains(list, x)
	}
	if req.ResourceRequest {
		key := req.Resource
		if req.Subresource != "" {
			key = req.Resource + "/" + req.Subresource
		}
		for _, rr := range r.ResourceRules {
			if !contains(rr.Verbs, req.Verb, "*") || !contains(rr.Resources, key, "*") || !contains(rr.APIGroups, req.APIGroup, "*") {
				continue
			}
			if req.Namespace == "" {
				if rr.ClusterScope {
					return true
				}
			} else if contains(rr.Namespaces, req.Namespace, "*") {
				return true
			}
		}
		return false
	}
	for _, nr := range r.NonResourceRules {
		if !contains(nr.Verbs, req.Verb, "*") {
			continue
		}
		for _, u := range nr.NonResourceURLs {
			if u == "*" || u == req.Path {
				return true
			}
			p := strings.TrimSuffix(u, "*")
			if !strings.HasSuffix(p, "/") {
				p += "/"
			}
			if strings.HasPrefix(req.Path, p) {
				return true
			}
		}
	}
	return false
}

// Small vocabularies make random rules and requests collide often.
var (
	vocUsers      = []string{"alice", "bob", "system:serviceaccount:ns1:sa1", "system:serviceaccount:ns1:sa2", "system:serviceaccount:kube-system:x", "system:node:n1", "*"}
	vocGroups     = []string{"system:authenticated", "system:unauthenticated", "system:nodes", "dev", "ops", "*"}
	vocNamespaces = []string{"ns1", "ns2", "kube-system", "*", ""}
	vocVerbs      = []string{"get", "list", "watch", "create", "update", "patch", "delete", "*"}
	vocGroupsAPI  = []string{"", "apps", "coordination.k8s.io", "*"}
	vocResources  = []string{"pods", "pods/log", "nodes", "nodes/status", "leases", "deployments", "*"}
	vocURLs       = []string{"/healthz", "/healthz/*", "/readyz", "/apis", "/apis/", "/apis/*", "/", "*", "/hea", "/metrics"}
	vocPaths      = []string{"/healthz", "/healthz/etcd", "/healthzx", "/readyz", "/apis", "/apis/apps", "/metrics", "/", "/hea", "/api/v1/pods"}
	vocLevels     = []string{"exempt", "catch-all", "l1", "l2", "l3", "missing"}
)

func subset(t *rapid.T, voc []string, label string) []string {
	return rapid.SliceOfNDistinct(rapid.SampledFrom(voc), 0, 3, rapid.ID[string]).Draw(t, label)
}

func genSubject(t *rapid.T, label string) Subject {
	switch rapid.IntRange(0, 9).Draw(t, label+".kind") {
	case 0, 1, 2:
		return user(rapid.SampledFrom(vocUsers).Draw(t, label+".user"))
	case 3, 4, 5, 6:
		return group(rapid.SampledFrom(vocGroups).Draw(t, label+".group"))
	case 7, 8:
		ns := rapid.SampledFrom([]string{"ns1", "kube-system", "ns"}).Draw(t, label+".ns")
		return serviceAccount(ns, rapid.SampledFrom([]string{"sa1", "x", "*"}).Draw(t, label+".sa"))
	default:
		return Subject{Kind: rapid.SampledFrom([]string{"User", "Bogus"}).Draw(t, label+".bad")}
	}
}

func genRule(t *rapid.T, label string) PolicyRulesWithSubjects {
	var r PolicyRulesWithSubjects
	for i := range rapid.IntRange(0, 3).Draw(t, label+".nsub") {
		r.Subjects = append(r.Subjects, genSubject(t, fmt.Sprintf("%s.s%d", label, i)))
	}
	for i := range rapid.IntRange(0, 2).Draw(t, label+".nrr") {
		l := fmt.Sprintf("%s.rr%d", label, i)
		r.ResourceRules = append(r.ResourceRules, ResourcePolicyRule{
			Verbs: subset(t, vocVerbs, l+".verbs"), APIGroups: subset(t, vocGroupsAPI, l+".groups"),
			Resources: subset(t, vocResources, l+".res"), Namespaces: subset(t, vocNamespaces, l+".ns"),
			ClusterScope: rapid.Bool().Draw(t, l+".cluster"),
		})
	}
	for i := range rapid.IntRange(0, 2).Draw(t, label+".nnr") {
		l := fmt.Sprintf("%s.nr%d", label, i)
		r.NonResourceRules = append(r.NonResourceRules, NonResourcePolicyRule{Verbs: subset(t, vocVerbs, l+".verbs"), NonResourceURLs: subset(t, vocURLs, l+".urls")})
	}
	return r
}

// genConfig draws a random configuration: some of the bootstrap objects,
// random levels (sometimes broken) and random FlowSchemas (sometimes
// dangling).
func genConfig(t *rapid.T, maxSchemas int) *Config {
	cfg := &Config{}
	def := DefaultConfig()
	for i := range def.PriorityLevels {
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("keepPL%d", i)) > 0 {
			cfg.PriorityLevels = append(cfg.PriorityLevels, def.PriorityLevels[i])
		}
	}
	for i := range def.FlowSchemas {
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("keepFS%d", i)) > 0 {
			cfg.FlowSchemas = append(cfg.FlowSchemas, def.FlowSchemas[i])
		}
	}
	for i, name := range []string{"l1", "l2", "l3"} {
		if !rapid.Bool().Draw(t, fmt.Sprintf("pl%d", i)) {
			continue
		}
		var pl PriorityLevelConfiguration
		switch rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("pl%d.kind", i)) {
		case 0:
			pl = newPL(name, mandatoryPLCatchAll().Spec)
		case 1:
			pl = queuingPL(name, 10, 0, 1, 1)
		case 2:
			pl = queuingPL(name, 10, 50, 128, 9) // broken: entropy
		default:
			pl = queuingPL(name, int32(rapid.IntRange(1, 100).Draw(t, "shares")), 0, 64, 6)
		}
		cfg.PriorityLevels = append(cfg.PriorityLevels, pl)
	}
	n := rapid.IntRange(0, maxSchemas).Draw(t, "nfs")
	for i := range n {
		l := fmt.Sprintf("fs%d", i)
		dist := rapid.SampledFrom([]string{"", DistinguisherByUser, DistinguisherByNamespace}).Draw(t, l+".dist")
		var rules []PolicyRulesWithSubjects
		for k := range rapid.IntRange(0, 3).Draw(t, l+".nrules") {
			rules = append(rules, genRule(t, fmt.Sprintf("%s.r%d", l, k)))
		}
		fs := newFS(fmt.Sprintf("fs-%02d", i), rapid.SampledFrom(vocLevels).Draw(t, l+".pl"),
			int32(rapid.IntRange(1, 12).Draw(t, l+".prec")*1000-rapid.IntRange(0, 2).Draw(t, l+".precd")), dist, rules...)
		cfg.FlowSchemas = append(cfg.FlowSchemas, fs)
	}
	return cfg
}

func genRequest(t *rapid.T) Request {
	r := Request{
		User:   rapid.SampledFrom(append(slices.Clone(vocUsers[:6]), "system:serviceaccount:ns:y", "system:kube-controller-manager")).Draw(t, "user"),
		Groups: rapid.SliceOfNDistinct(rapid.SampledFrom(vocGroups[:5]), 0, 3, rapid.ID[string]).Draw(t, "groups"),
		Verb:   rapid.SampledFrom(vocVerbs[:7]).Draw(t, "verb"),
	}
	if rapid.Bool().Draw(t, "resource") {
		r.ResourceRequest = true
		r.APIGroup = rapid.SampledFrom(vocGroupsAPI[:3]).Draw(t, "apiGroup")
		res := rapid.SampledFrom(vocResources[:6]).Draw(t, "res")
		r.Resource, r.Subresource, _ = strings.Cut(res, "/")
		r.Namespace = rapid.SampledFrom([]string{"ns1", "ns2", "kube-system", ""}).Draw(t, "ns")
	} else {
		r.Path = rapid.SampledFrom(vocPaths).Draw(t, "path")
	}
	return r
}
