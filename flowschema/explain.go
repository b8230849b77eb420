package flowschema

import (
	"fmt"
	"strconv"
	"strings"
)

// Explanation says how a request was classified: which FlowSchema matched
// through which rule, subject and resource or non-resource rule, and for
// every FlowSchema tried before it, why it did not match.
type Explanation struct {
	Request  Request
	Decision Decision
	// Tried lists the FlowSchemas in matching order up to and including the
	// one that matched (every FlowSchema when none did).
	Tried []SchemaResult
	// Dangling lists the FlowSchemas skipped for a missing priority level.
	Dangling []DanglingSchema
}

// SchemaResult is the outcome of one FlowSchema for a request.
type SchemaResult struct {
	FlowSchema         string
	MatchingPrecedence int32
	PriorityLevel      string
	// Imagined is true for a mandatory FlowSchema Compile added.
	Imagined bool
	Matched  bool
	// For a match: the indexes of the rule, of its first matching subject
	// and of its first matching resource rule (resource requests) or
	// non-resource rule (others); the unused one is -1.
	Rule, Subject, ResourceRule, NonResourceRule int
	// Subject of the match, described ("Group system:authenticated").
	SubjectText string
	// Reasons, when not matched: one line per rule.
	Reasons []string
}

// Explain classifies req like Classify and says why. It allocates; use
// Classify on hot paths.
func (c *Classifier) Explain(req *Request) Explanation {
	e := Explanation{Request: *req, Decision: c.Classify(req), Dangling: c.dangling}
	for i := range c.schemas {
		fs := &c.schemas[i]
		r := SchemaResult{FlowSchema: fs.Name, MatchingPrecedence: fs.Spec.MatchingPrecedence,
			PriorityLevel: fs.Spec.PriorityLevelConfiguration.Name, Imagined: c.imagined[i],
			Rule: -1, Subject: -1, ResourceRule: -1, NonResourceRule: -1}
		if len(fs.Spec.Rules) == 0 {
			r.Reasons = append(r.Reasons, "has no rules")
		}
		for ri := range fs.Spec.Rules {
			rule := &fs.Spec.Rules[ri]
			reason, subj, rr, nr := explainRule(req, rule)
			if reason == "" {
				r.Matched, r.Rule, r.Subject, r.ResourceRule, r.NonResourceRule = true, ri, subj, rr, nr
				r.SubjectText = describeSubject(&rule.Subjects[subj])
				r.Reasons = nil
				break
			}
			r.Reasons = append(r.Reasons, fmt.Sprintf("rules[%d]: %s", ri, reason))
		}
		e.Tried = append(e.Tried, r)
		if r.Matched {
			break
		}
	}
	return e
}

// explainRule returns "" and the matching indexes, or why rule does not
// match.
func explainRule(req *Request, rule *PolicyRulesWithSubjects) (reason string, subj, rr, nr int) {
	subj, rr, nr = firstSubject(req, rule.Subjects), -1, -1
	if subj < 0 {
		if len(rule.Subjects) == 0 {
			return "has no subjects", -1, -1, -1
		}
		ss := make([]string, len(rule.Subjects))
		for i := range rule.Subjects {
			ss[i] = describeSubject(&rule.Subjects[i])
		}
		return "no subject matches (" + strings.Join(ss, ", ") + ")", -1, -1, -1
	}
	if req.ResourceRequest {
		if rr = firstResourceRule(req, rule.ResourceRules); rr >= 0 {
			return "", subj, rr, -1
		}
		if len(rule.ResourceRules) == 0 {
			return "subject matches but the rule has no resourceRules (this is a resource request)", subj, -1, -1
		}
		var why []string
		for i := range rule.ResourceRules {
			why = append(why, fmt.Sprintf("resourceRules[%d] %s", i, resourceMiss(req, &rule.ResourceRules[i])))
		}
		return "subject matches but " + strings.Join(why, "; "), subj, -1, -1
	}
	if nr = firstNonResourceRule(req, rule.NonResourceRules); nr >= 0 {
		return "", subj, -1, nr
	}
	if len(rule.NonResourceRules) == 0 {
		return "subject matches but the rule has no nonResourceRules (this is a non-resource request)", subj, -1, -1
	}
	var why []string
	for i := range rule.NonResourceRules {
		r := &rule.NonResourceRules[i]
		if !listHas(r.Verbs, req.Verb, VerbAll) {
			why = append(why, fmt.Sprintf("nonResourceRules[%d] verb %q not in %s", i, req.Verb, list(r.Verbs)))
		} else {
			why = append(why, fmt.Sprintf("nonResourceRules[%d] path %q not matched by %s", i, req.Path, list(r.NonResourceURLs)))
		}
	}
	return "subject matches but " + strings.Join(why, "; "), subj, -1, -1
}

func resourceMiss(req *Request, r *ResourcePolicyRule) string {
	switch {
	case !listHas(r.Verbs, req.Verb, VerbAll):
		return fmt.Sprintf("verb %q not in %s", req.Verb, list(r.Verbs))
	case !resourcesHave(r.Resources, req.Resource, req.Subresource):
		key := req.Resource
		if req.Subresource != "" {
			key += "/" + req.Subresource
		}
		return fmt.Sprintf("resource %q not in %s", key, list(r.Resources))
	case !listHas(r.APIGroups, req.APIGroup, APIGroupAll):
		return fmt.Sprintf("apiGroup %q not in %s", req.APIGroup, list(r.APIGroups))
	case req.Namespace == "":
		return "is not clusterScope (this request has no namespace)"
	default:
		return fmt.Sprintf("namespace %q not in %s", req.Namespace, list(r.Namespaces))
	}
}

func list(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, " ") + "]"
}

func describeSubject(s *Subject) string {
	switch {
	case s.Kind == SubjectKindUser && s.User != nil:
		return "User " + s.User.Name
	case s.Kind == SubjectKindGroup && s.Group != nil:
		return "Group " + s.Group.Name
	case s.Kind == SubjectKindServiceAccount && s.ServiceAccount != nil:
		return "ServiceAccount " + s.ServiceAccount.Namespace + "/" + s.ServiceAccount.Name
	}
	return "malformed " + strconv.Quote(s.Kind) + " subject"
}

// DescribeRequest renders req in one line.
func DescribeRequest(req *Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "user %q groups %s verb %q", req.User, list(req.Groups), req.Verb)
	if req.ResourceRequest {
		res := req.Resource
		if req.Subresource != "" {
			res += "/" + req.Subresource
		}
		fmt.Fprintf(&b, " apiGroup %q resource %q", req.APIGroup, res)
		if req.Namespace != "" {
			fmt.Fprintf(&b, " namespace %q", req.Namespace)
		} else {
			b.WriteString(" cluster-scoped")
		}
		if req.Name != "" {
			fmt.Fprintf(&b, " name %q", req.Name)
		}
	} else {
		fmt.Fprintf(&b, " path %q (non-resource)", req.Path)
	}
	return b.String()
}

// String renders the explanation as text, one fact per line.
func (e *Explanation) String() string {
	var b strings.Builder
	d := &e.Decision
	fmt.Fprintf(&b, "request: %s\n", DescribeRequest(&e.Request))
	if d.Fallback {
		fmt.Fprintf(&b, "no FlowSchema matched; falling back to %s as upstream does\n", d.FlowSchema)
	} else {
		m := e.Tried[len(e.Tried)-1]
		fmt.Fprintf(&b, "matched: FlowSchema %s (precedence %d) via rules[%d], subjects[%d] (%s), ",
			m.FlowSchema, m.MatchingPrecedence, m.Rule, m.Subject, m.SubjectText)
		if m.ResourceRule >= 0 {
			fmt.Fprintf(&b, "resourceRules[%d]\n", m.ResourceRule)
		} else {
			fmt.Fprintf(&b, "nonResourceRules[%d]\n", m.NonResourceRule)
		}
	}
	fmt.Fprintf(&b, "priority level: %s", d.PriorityLevel)
	switch {
	case d.Exempt:
		b.WriteString(" (exempt: no queuing, no flow)\n")
	case d.HasFlow:
		fmt.Fprintf(&b, "\nflow: distinguisher %q, hash %#016x\n", d.Distinguisher, d.FlowHash)
	default:
		b.WriteString(" (at most one queue or rejecting: no flow)\n")
	}
	tried := e.Tried
	if !d.Fallback {
		tried = tried[:len(tried)-1]
	}
	if len(tried) > 0 {
		b.WriteString("not matched:\n")
	}
	for _, t := range tried {
		img := ""
		if t.Imagined {
			img = ", added as mandatory"
		}
		fmt.Fprintf(&b, "  %s (precedence %d%s):\n", t.FlowSchema, t.MatchingPrecedence, img)
		for _, r := range t.Reasons {
			fmt.Fprintf(&b, "    %s\n", r)
		}
	}
	for _, dg := range e.Dangling {
		fmt.Fprintf(&b, "skipped: %s references missing priority level %q\n", dg.Name, dg.PriorityLevel)
	}
	return b.String()
}
