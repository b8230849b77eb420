package flowschema

import (
	"fmt"
	"slices"
	"strings"
)

// FindingKind names a class of configuration mistake Lint reports.
type FindingKind string

// The findings of Lint.
const (
	// FindingShadowed: a FlowSchema that can never be selected because
	// FlowSchemas before it match every request it matches.
	FindingShadowed FindingKind = "shadowed"
	// FindingNeverMatches: a FlowSchema none of whose rules can match any
	// request (no subjects, no usable resource or non-resource rules).
	FindingNeverMatches FindingKind = "never-matches"
	// FindingDangling: a FlowSchema naming a priority level the
	// configuration lacks or that is ignored; upstream skips it.
	FindingDangling FindingKind = "dangling"
	// FindingIgnoredLevel: a priority level upstream's controller ignores.
	FindingIgnoredLevel FindingKind = "ignored-level"
	// FindingUnreachable: a priority level no selectable FlowSchema names.
	FindingUnreachable FindingKind = "unreachable"
)

// Finding is one problem Lint found: the object, what is wrong, and the
// objects that cause it.
type Finding struct {
	Kind    FindingKind
	Object  string // KindFS or KindPL
	Name    string
	Causes  []string // names of the objects responsible, if any
	Message string
}

// String renders f in one line: "<kind> <Object> <name>: <message>".
func (f Finding) String() string {
	return fmt.Sprintf("%s %s %s: %s", f.Kind, f.Object, f.Name, f.Message)
}

// Lint compiles cfg and returns Classifier.Lint.
func Lint(cfg *Config) ([]Finding, error) {
	c, err := Compile(cfg)
	if err != nil {
		return nil, err
	}
	return c.Lint(), nil
}

// Lint finds configuration mistakes beyond what validation catches:
// shadowed and never-matching FlowSchemas, dangling priority-level
// references, ignored levels and levels no FlowSchema can reach. The
// shadowing check is sound but not complete: a FlowSchema is reported
// only when, for each of its (subject, resource or non-resource rule)
// pairs, one earlier rule alone covers the pair; coverage that needs the
// union of several earlier rules is not detected. The catch-all FlowSchema
// is never reported as shadowed: it is the fallback for requests nothing
// matches.
func (c *Classifier) Lint() []Finding {
	out := c.lintIgnored(nil)
	out = c.lintDangling(out)
	out, selectable := c.lintSchemas(out)
	return c.lintUnreachable(out, selectable)
}

// lintIgnored appends a finding per ignored priority level, naming the
// FlowSchemas that reference it.
func (c *Classifier) lintIgnored(out []Finding) []Finding {
	for _, ig := range c.ignored {
		var refs []string
		for _, d := range c.dangling {
			if d.PriorityLevel == ig.Name {
				refs = append(refs, d.Name)
			}
		}
		out = append(out, Finding{Kind: FindingIgnoredLevel, Object: KindPL, Name: ig.Name, Causes: refs,
			Message: "ignored by the API server's APF controller: " + ig.Reason})
	}
	return out
}

// lintDangling appends a finding per FlowSchema skipped for its priority
// level reference.
func (c *Classifier) lintDangling(out []Finding) []Finding {
	for _, d := range c.dangling {
		msg := fmt.Sprintf("references priority level %q, which ", d.PriorityLevel)
		switch {
		case slices.ContainsFunc(c.ignored, func(ig IgnoredLevel) bool { return ig.Name == d.PriorityLevel }):
			msg += "is ignored (broken)"
		case d.PriorityLevel == PriorityLevelNameExempt || d.PriorityLevel == PriorityLevelNameCatchAll:
			msg += "the configuration lacks; the mandatory level is added only after references are checked"
		default:
			msg += "does not exist"
		}
		out = append(out, Finding{Kind: FindingDangling, Object: KindFS, Name: d.Name, Causes: []string{d.PriorityLevel},
			Message: msg + "; the FlowSchema is skipped"})
	}
	return out
}

// lintSchemas appends a finding per FlowSchema that never matches or is
// shadowed, and returns which FlowSchemas can be selected (the catch-all
// always can: it is upstream's fallback).
func (c *Classifier) lintSchemas(out []Finding) ([]Finding, []bool) {
	selectable := make([]bool, len(c.schemas))
	for i := range c.schemas {
		fs := &c.schemas[i]
		pairs := matchablePairs(fs)
		if len(pairs) == 0 {
			out = append(out, Finding{Kind: FindingNeverMatches, Object: KindFS, Name: fs.Name,
				Message: "no rule can match any request (each rule needs a subject and a resource or non-resource rule with non-empty lists)"})
			continue
		}
		var causes []string
		shadowed := true
		for _, p := range pairs {
			by := c.coveredBy(i, p)
			if by < 0 {
				shadowed = false
				break
			}
			if name := c.schemas[by].Name; !slices.Contains(causes, name) {
				causes = append(causes, name)
			}
		}
		// The catch-all FlowSchema is exempt: it is upstream's fallback
		// for requests nothing matches, and global-default shadows it in
		// the default configuration by design.
		if shadowed && i != c.catchAll {
			out = append(out, Finding{Kind: FindingShadowed, Object: KindFS, Name: fs.Name, Causes: causes,
				Message: "every request it matches is matched first by " + strings.Join(causes, ", ")})
			continue
		}
		selectable[i] = true
	}
	if c.catchAll >= 0 {
		selectable[c.catchAll] = true // upstream's fallback
	}
	return out, selectable
}

// lintUnreachable appends a finding per configured priority level that no
// selectable FlowSchema references.
func (c *Classifier) lintUnreachable(out []Finding, selectable []bool) []Finding {
	for li := range c.levels {
		if c.levelImg[li] {
			continue
		}
		name := c.levels[li].Name
		reached := false
		var causes []string
		for i := range c.schemas {
			if c.cs[i].level != li {
				continue
			}
			if selectable[i] {
				reached = true
				break
			}
			causes = append(causes, c.schemas[i].Name)
		}
		if reached {
			continue
		}
		msg := "no FlowSchema references it"
		if len(causes) > 0 {
			msg = "the FlowSchemas that reference it (" + strings.Join(causes, ", ") + ") can never be selected"
		}
		out = append(out, Finding{Kind: FindingUnreachable, Object: KindPL, Name: name, Causes: causes, Message: msg})
	}
	return out
}

// pair is one way a FlowSchema can match: a subject with a resource rule
// or with a non-resource rule.
type pair struct {
	subject *Subject
	rr      *ResourcePolicyRule
	nr      *NonResourcePolicyRule
}

func matchablePairs(fs *FlowSchema) []pair {
	var out []pair
	for ri := range fs.Spec.Rules {
		rule := &fs.Spec.Rules[ri]
		for si := range rule.Subjects {
			s := &rule.Subjects[si]
			if !subjectUsable(s) {
				continue
			}
			for k := range rule.ResourceRules {
				rr := &rule.ResourceRules[k]
				if len(rr.Verbs) > 0 && len(rr.APIGroups) > 0 && len(rr.Resources) > 0 && (rr.ClusterScope || slices.ContainsFunc(rr.Namespaces, func(n string) bool { return n != "" })) {
					out = append(out, pair{subject: s, rr: rr})
				}
			}
			for k := range rule.NonResourceRules {
				nr := &rule.NonResourceRules[k]
				if len(nr.Verbs) > 0 && len(nr.NonResourceURLs) > 0 {
					out = append(out, pair{subject: s, nr: nr})
				}
			}
		}
	}
	return out
}

func subjectUsable(s *Subject) bool {
	switch s.Kind {
	case SubjectKindUser:
		return s.User != nil
	case SubjectKindGroup:
		return s.Group != nil
	case SubjectKindServiceAccount:
		return s.ServiceAccount != nil
	}
	return false
}

// coveredBy returns the index of an earlier FlowSchema with one rule that
// matches every request p matches, or -1.
func (c *Classifier) coveredBy(before int, p pair) int {
	for i := 0; i < before; i++ {
		for ri := range c.schemas[i].Spec.Rules {
			rule := &c.schemas[i].Spec.Rules[ri]
			if !slices.ContainsFunc(rule.Subjects, func(s Subject) bool { return subjectCovers(&s, p.subject) }) {
				continue
			}
			if p.rr != nil && slices.ContainsFunc(rule.ResourceRules, func(r ResourcePolicyRule) bool { return resourceRuleCovers(&r, p.rr) }) {
				return i
			}
			if p.nr != nil && slices.ContainsFunc(rule.NonResourceRules, func(r NonResourcePolicyRule) bool { return nonResourceRuleCovers(&r, p.nr) }) {
				return i
			}
		}
	}
	return -1
}

func isWildcardSubject(s *Subject) bool {
	return s.Kind == SubjectKindUser && s.User != nil && s.User.Name == NameAll ||
		s.Kind == SubjectKindGroup && s.Group != nil && s.Group.Name == NameAll
}

// subjectCovers reports whether every requester s matches is matched by
// by. Requests may carry any groups, so only a group subject or a
// wildcard covers a group subject.
func subjectCovers(by, s *Subject) bool {
	if isWildcardSubject(by) {
		return true
	}
	switch s.Kind {
	case SubjectKindUser:
		if s.User.Name == NameAll {
			return false
		}
		return subjectMatches(&Request{User: s.User.Name}, by)
	case SubjectKindGroup:
		return s.Group.Name != NameAll && by.Kind == SubjectKindGroup && by.Group != nil && by.Group.Name == s.Group.Name
	case SubjectKindServiceAccount:
		sa := s.ServiceAccount
		if sa.Name != NameAll {
			return subjectMatches(&Request{User: ServiceAccountUsernamePrefix + sa.Namespace + ":" + sa.Name}, by)
		}
		return by.Kind == SubjectKindServiceAccount && by.ServiceAccount != nil && by.ServiceAccount.Name == NameAll &&
			strings.HasPrefix(sa.Namespace+":", by.ServiceAccount.Namespace+":")
	}
	return false
}

// listCovers reports whether every value list accepts is accepted by by.
func listCovers(by, list []string, wildcard string) bool {
	if len(by) == 1 && by[0] == wildcard {
		return true
	}
	if len(list) == 1 && list[0] == wildcard {
		return false
	}
	for _, v := range list {
		if !slices.Contains(by, v) {
			return false
		}
	}
	return true
}

func resourceRuleCovers(by, r *ResourcePolicyRule) bool {
	if !listCovers(by.Verbs, r.Verbs, VerbAll) || !listCovers(by.APIGroups, r.APIGroups, APIGroupAll) ||
		!listCovers(by.Resources, r.Resources, ResourceAll) {
		return false
	}
	if r.ClusterScope && !by.ClusterScope {
		return false
	}
	var ns []string
	for _, n := range r.Namespaces {
		if n != "" { // "" never matches: namespaced requests have a namespace
			ns = append(ns, n)
		}
	}
	return len(ns) == 0 || listCovers(by.Namespaces, ns, NamespaceEvery)
}

func nonResourceRuleCovers(by, r *NonResourcePolicyRule) bool {
	if !listCovers(by.Verbs, r.Verbs, VerbAll) {
		return false
	}
	for _, u := range r.NonResourceURLs {
		if !slices.ContainsFunc(by.NonResourceURLs, func(b string) bool { return urlCovers(b, u) }) {
			return false
		}
	}
	return true
}

// urlCovers reports whether every path u matches is matched by by: u
// itself, and everything under u's prefix.
func urlCovers(by, u string) bool {
	if by == NonResourceAll {
		return true
	}
	if u == NonResourceAll {
		return false
	}
	return urlMatches(by, u) && strings.HasPrefix(urlPrefix(u), urlPrefix(by))
}

func urlPrefix(u string) string {
	p := strings.TrimSuffix(u, "*")
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}
