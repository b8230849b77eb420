package flowschema

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// TestIndexMatchesReference property-tests the index against the linear
// reference matcher on random configurations and requests.
func TestIndexMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, err := Compile(genConfig(t, 12))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			req := genRequest(t)
			d := c.Classify(&req)
			schema, rule := referenceClassify(c, &req)
			if diff := cmp.Diff([]int{schema, rule}, []int{d.SchemaIndex, d.Rule}); diff != "" {
				t.Fatalf("request %d %s: Classify chose %s rules[%d], reference %s rules[%d]",
					i, DescribeRequest(&req), d.FlowSchema, d.Rule, c.schemas[schema].Name, rule)
			}
			if lin := linearFirst(c.rules, &req); lin >= 0 && (c.rules[lin].schema != schema || c.rules[lin].index != rule) {
				t.Fatalf("linearFirst disagrees with the reference")
			}
		}
	})
}

// TestIndexMatchesReferenceLarge is the same with up to 300 FlowSchemas,
// so that the index spans many words and summary bits.
func TestIndexMatchesReferenceLarge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, err := Compile(genConfig(t, 300))
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			req := genRequest(t)
			d := c.Classify(&req)
			if schema, rule := referenceClassify(c, &req); schema != d.SchemaIndex || rule != d.Rule {
				t.Fatalf("%s: Classify chose %s rules[%d], reference %s rules[%d] (%d rules)",
					DescribeRequest(&req), d.FlowSchema, d.Rule, c.schemas[schema].Name, rule, len(c.rules))
			}
		}
	})
}

// TestShadowedNeverSelected proves Lint's "shadowed" findings with the
// reference matcher: requests built to match a shadowed FlowSchema (and
// random ones) never select it.
func TestShadowedNeverSelected(t *testing.T) {
	found, matching := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t, 10)
		addNarrowedCopies(t, cfg)
		c, err := Compile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range c.Lint() {
			if f.Kind != FindingShadowed {
				continue
			}
			found++
			idx := -1
			for i := range c.schemas {
				if c.schemas[i].Name == f.Name {
					idx = i
				}
			}
			pairs := matchablePairs(&c.schemas[idx])
			for k := range 30 {
				var req Request
				if k%3 == 0 {
					req = genRequest(t)
				} else {
					req = requestFor(t, rapid.SampledFrom(pairs).Draw(t, "pair"))
				}
				for ri := range c.schemas[idx].Spec.Rules {
					if refRule(&req, &c.schemas[idx].Spec.Rules[ri]) {
						matching++
						break
					}
				}
				// The catch-all fallback is not a match (rule -1).
				if s, r := referenceClassify(c, &req); s == idx && r >= 0 {
					t.Fatalf("%s reported shadowed, but the reference matcher selects it for %s", f.Name, DescribeRequest(&req))
				}
			}
		}
	})
	if found == 0 || matching < 100 {
		t.Errorf("%d shadowed FlowSchemas and %d requests they match; too few for a proof", found, matching)
	}
	t.Logf("%d shadowed FlowSchemas, %d requests they match, none selected them", found, matching)
}

// addNarrowedCopies appends, after some FlowSchemas, copies with a later
// precedence and fewer subjects and rules: shadowed by construction, unless
// the original itself is dangling.
func addNarrowedCopies(t *rapid.T, cfg *Config) {
	n := len(cfg.FlowSchemas)
	for k := range rapid.IntRange(0, 3).Draw(t, "copies") {
		if n == 0 {
			return
		}
		orig := cfg.FlowSchemas[rapid.IntRange(0, n-1).Draw(t, "orig")].DeepCopy()
		orig.Name = fmt.Sprintf("narrow-%d", k)
		orig.Spec.MatchingPrecedence++
		for ri := range orig.Spec.Rules {
			r := &orig.Spec.Rules[ri]
			if len(r.Subjects) > 1 {
				r.Subjects = r.Subjects[:1]
			}
			if len(r.ResourceRules) > 1 {
				r.ResourceRules = r.ResourceRules[1:]
			}
		}
		cfg.FlowSchemas = append(cfg.FlowSchemas, *orig)
	}
}

// requestFor draws a request that p matches.
func requestFor(t *rapid.T, p pair) Request {
	pick := func(list []string, label string, any []string) string {
		if len(list) == 1 && list[0] == "*" {
			return rapid.SampledFrom(any).Draw(t, label)
		}
		return rapid.SampledFrom(list).Draw(t, label)
	}
	var req Request
	s := p.subject
	switch s.Kind {
	case SubjectKindUser:
		req.User = pick([]string{s.User.Name}, "u", []string{"zed", "alice"})
	case SubjectKindGroup:
		req.User = "zed"
		req.Groups = []string{pick([]string{s.Group.Name}, "g", []string{"dev", "other"})}
	case SubjectKindServiceAccount:
		name := s.ServiceAccount.Name
		if name == "*" {
			name = rapid.SampledFrom([]string{"a", "b"}).Draw(t, "san")
		}
		req.User = ServiceAccountUsernamePrefix + s.ServiceAccount.Namespace + ":" + name
	}
	req.Groups = append(req.Groups, rapid.SliceOfN(rapid.SampledFrom(vocGroups[:5]), 0, 2).Draw(t, "extra")...)
	if rr := p.rr; rr != nil {
		req.ResourceRequest = true
		req.Verb = pick(rr.Verbs, "v", []string{"get", "list", "escalate"})
		req.APIGroup = pick(rr.APIGroups, "ag", []string{"", "apps", "x.io"})
		req.Resource = pick(rr.Resources, "r", []string{"pods", "secrets", "pods/log"})
		if i := len(req.Resource); i > 0 {
			for j := range req.Resource {
				if req.Resource[j] == '/' {
					req.Resource, req.Subresource = req.Resource[:j], req.Resource[j+1:]
					break
				}
			}
		}
		var nss []string
		for _, n := range rr.Namespaces {
			if n != "" {
				nss = append(nss, n)
			}
		}
		if rr.ClusterScope && (len(nss) == 0 || rapid.Bool().Draw(t, "cluster")) {
			req.Namespace = ""
		} else if len(nss) > 0 {
			req.Namespace = pick(nss, "ns", []string{"ns1", "zz"})
		}
	} else {
		nr := p.nr
		req.Verb = pick(nr.Verbs, "v", []string{"get", "post"})
		u := rapid.SampledFrom(nr.NonResourceURLs).Draw(t, "url")
		switch {
		case u == "*":
			req.Path = "/anything"
		case rapid.Bool().Draw(t, "sub"):
			req.Path = urlPrefix(u) + "x/y"
		default:
			req.Path = u
		}
	}
	return req
}
