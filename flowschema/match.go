package flowschema

import "strings"

// The exact matching predicates, shared by the index (which verifies its
// candidates with them) and by Explain. They follow k8s.io/apiserver
// pkg/util/flowcontrol/rule.go; none of them allocates.

// matchesRule reports whether rule matches req.
func matchesRule(req *Request, rule *PolicyRulesWithSubjects) bool {
	if firstSubject(req, rule.Subjects) < 0 {
		return false
	}
	if req.ResourceRequest {
		return firstResourceRule(req, rule.ResourceRules) >= 0
	}
	return firstNonResourceRule(req, rule.NonResourceRules) >= 0
}

// firstSubject returns the index of the first subject matching the
// requester, or -1.
func firstSubject(req *Request, subjects []Subject) int {
	for i := range subjects {
		if subjectMatches(req, &subjects[i]) {
			return i
		}
	}
	return -1
}

func subjectMatches(req *Request, s *Subject) bool {
	switch s.Kind {
	case SubjectKindUser:
		return s.User != nil && (s.User.Name == NameAll || s.User.Name == req.User)
	case SubjectKindGroup:
		if s.Group == nil {
			return false
		}
		if s.Group.Name == NameAll {
			return true
		}
		for _, g := range req.Groups {
			if g == s.Group.Name {
				return true
			}
		}
		return false
	case SubjectKindServiceAccount:
		sa := s.ServiceAccount
		if sa == nil {
			return false
		}
		rest, ok := strings.CutPrefix(req.User, ServiceAccountUsernamePrefix)
		if !ok {
			return false
		}
		rest, ok = strings.CutPrefix(rest, sa.Namespace)
		if !ok || !strings.HasPrefix(rest, ":") {
			return false
		}
		return sa.Name == NameAll || rest[1:] == sa.Name
	}
	return false
}

// firstResourceRule returns the index of the first resource rule matching
// req, or -1.
func firstResourceRule(req *Request, rules []ResourcePolicyRule) int {
	for i := range rules {
		if resourceRuleMatches(req, &rules[i]) {
			return i
		}
	}
	return -1
}

func resourceRuleMatches(req *Request, r *ResourcePolicyRule) bool {
	if !listHas(r.Verbs, req.Verb, VerbAll) ||
		!resourcesHave(r.Resources, req.Resource, req.Subresource) ||
		!listHas(r.APIGroups, req.APIGroup, APIGroupAll) {
		return false
	}
	if req.Namespace == "" {
		return r.ClusterScope
	}
	return listHas(r.Namespaces, req.Namespace, NamespaceEvery)
}

// firstNonResourceRule returns the index of the first non-resource rule
// matching req, or -1.
func firstNonResourceRule(req *Request, rules []NonResourcePolicyRule) int {
	for i := range rules {
		r := &rules[i]
		if listHas(r.Verbs, req.Verb, VerbAll) && urlsMatch(r.NonResourceURLs, req.Path) {
			return i
		}
	}
	return -1
}

// listHas is upstream's containsString: the wildcard counts only as the
// sole member of the list.
func listHas(list []string, x, wildcard string) bool {
	if len(list) == 1 && list[0] == wildcard {
		return true
	}
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

// resourcesHave is listHas for the key resource or resource/subresource,
// without building the key.
func resourcesHave(list []string, resource, subresource string) bool {
	if len(list) == 1 && list[0] == ResourceAll {
		return true
	}
	for _, y := range list {
		if resourceKeyIs(y, resource, subresource) {
			return true
		}
	}
	return false
}

func resourceKeyIs(key, resource, subresource string) bool {
	if subresource == "" {
		return key == resource
	}
	n := len(resource)
	return len(key) == n+1+len(subresource) && key[:n] == resource && key[n] == '/' && key[n+1:] == subresource
}

func urlsMatch(urls []string, path string) bool {
	for _, u := range urls {
		if urlMatches(u, path) {
			return true
		}
	}
	return false
}

// urlMatches: "*" matches everything; otherwise the path must equal the
// URL, or start with the URL (less a trailing "*") followed by "/" — so a
// plain "/healthz" also matches "/healthz/etcd", as upstream.
func urlMatches(u, path string) bool {
	if u == NonResourceAll || u == path {
		return true
	}
	prefix := strings.TrimSuffix(u, "*")
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(path, prefix)
	}
	return len(path) > len(prefix) && path[:len(prefix)] == prefix && path[len(prefix)] == '/'
}
