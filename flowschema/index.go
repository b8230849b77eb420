package flowschema

import (
	"math/bits"
	"strings"
)

// index finds the first rule (in matching order) that matches a request.
//
// Every rule has a bit, in matching order. For each attribute value that
// occurs in the configuration (a user name, a group, a service-account
// namespace, a verb, a resource key, an API group) the index keeps the set
// of rules that could match a request with that value, plus a set for the
// rules that accept any value. A request's candidates are the intersection
// of a few unions of these sets; they are a superset of the matching rules,
// so each candidate, in order, is verified with the exact predicates, and
// the first that passes wins. The sets are scanned a word (64 rules) at a
// time, stopping at the first word holding a verified match, so no scratch
// memory is needed.
type index struct {
	words int
	flat  []uint64 // set k is flat[k*words:(k+1)*words]; set 0 is empty

	users, groups, saNamespaces map[string]int32
	subjectsAny                 int32

	resVerbs, resResources, resGroups map[string]int32
	resVerbsAny, resResourcesAny      int32
	resGroupsAny                      int32

	nonResVerbs    map[string]int32
	nonResVerbsAny int32
}

// maxSubjectSets bounds the subject sets a request unions (any, user,
// service-account namespace and the groups that occur in the
// configuration); a request beyond it is classified by a linear scan.
const maxSubjectSets = 16

type indexBuilder struct {
	ix   *index
	sets [][]uint64
}

func (b *indexBuilder) newSet() int32 {
	b.sets = append(b.sets, make([]uint64, b.ix.words))
	return int32(len(b.sets) - 1)
}

func (b *indexBuilder) add(m map[string]int32, key string, rule int) {
	k, ok := m[key]
	if !ok {
		k = b.newSet()
		m[key] = k
	}
	b.set(k, rule)
}

func (b *indexBuilder) set(k int32, rule int) { b.sets[k][rule/64] |= 1 << (rule % 64) }

// addList indexes a list of values with upstream's wildcard rule: the
// wildcard means "any" only as the sole member; otherwise every member,
// the wildcard string included, is a literal.
func (b *indexBuilder) addList(m map[string]int32, anySet int32, list []string, wildcard string, rule int) {
	if len(list) == 1 && list[0] == wildcard {
		b.set(anySet, rule)
		return
	}
	for _, v := range list {
		b.add(m, v, rule)
	}
}

func buildIndex(rules []compiledRule) index {
	ix := index{
		words:        (len(rules) + 63) / 64,
		users:        map[string]int32{},
		groups:       map[string]int32{},
		saNamespaces: map[string]int32{},
		resVerbs:     map[string]int32{},
		resResources: map[string]int32{},
		resGroups:    map[string]int32{},
		nonResVerbs:  map[string]int32{},
	}
	b := &indexBuilder{ix: &ix}
	b.newSet() // the empty set
	ix.subjectsAny, ix.resVerbsAny, ix.resResourcesAny, ix.resGroupsAny, ix.nonResVerbsAny =
		b.newSet(), b.newSet(), b.newSet(), b.newSet(), b.newSet()
	for r, cr := range rules {
		for _, s := range cr.rule.Subjects {
			switch s.Kind {
			case SubjectKindUser:
				if s.User == nil {
					continue
				}
				if s.User.Name == NameAll {
					b.set(ix.subjectsAny, r)
				} else {
					b.add(ix.users, s.User.Name, r)
				}
			case SubjectKindGroup:
				if s.Group == nil {
					continue
				}
				if s.Group.Name == NameAll {
					b.set(ix.subjectsAny, r)
				} else {
					b.add(ix.groups, s.Group.Name, r)
				}
			case SubjectKindServiceAccount:
				sa := s.ServiceAccount
				switch {
				case sa == nil:
				case strings.Contains(sa.Namespace, ":"):
					// Not a namespace a user name can be split into;
					// leave it to verification.
					b.set(ix.subjectsAny, r)
				case sa.Name == NameAll:
					b.add(ix.saNamespaces, sa.Namespace, r)
				default:
					b.add(ix.users, ServiceAccountUsernamePrefix+sa.Namespace+":"+sa.Name, r)
				}
			}
		}
		for _, rr := range cr.rule.ResourceRules {
			b.addList(ix.resVerbs, ix.resVerbsAny, rr.Verbs, VerbAll, r)
			b.addList(ix.resResources, ix.resResourcesAny, rr.Resources, ResourceAll, r)
			b.addList(ix.resGroups, ix.resGroupsAny, rr.APIGroups, APIGroupAll, r)
		}
		for _, nr := range cr.rule.NonResourceRules {
			b.addList(ix.nonResVerbs, ix.nonResVerbsAny, nr.Verbs, VerbAll, r)
		}
	}
	ix.flat = make([]uint64, 0, len(b.sets)*ix.words)
	for _, s := range b.sets {
		ix.flat = append(ix.flat, s...)
	}
	return ix
}

// resourceKeyBuffer bounds the resource/subresource keys looked up without
// allocating.
const resourceKeyBuffer = 128

// first returns the index in rules of the first rule that matches req, or
// -1.
func (ix *index) first(rules []compiledRule, req *Request) int {
	var subj [maxSubjectSets]int32
	n := 0
	subj[n] = ix.subjectsAny
	n++
	if k := ix.users[req.User]; k != 0 {
		subj[n] = k
		n++
	}
	if rest, ok := strings.CutPrefix(req.User, ServiceAccountUsernamePrefix); ok {
		if i := strings.IndexByte(rest, ':'); i >= 0 {
			if k := ix.saNamespaces[rest[:i]]; k != 0 {
				subj[n] = k
				n++
			}
		}
	}
	for _, g := range req.Groups {
		if k := ix.groups[g]; k != 0 {
			if n == maxSubjectSets {
				return linearFirst(rules, req)
			}
			subj[n] = k
			n++
		}
	}

	// The attribute filters: pairs of (value set, any set).
	var filt [6]int32
	nf := 0
	if req.ResourceRequest {
		var key int32
		if req.Subresource == "" {
			key = ix.resResources[req.Resource]
		} else if len(req.Resource)+1+len(req.Subresource) <= resourceKeyBuffer {
			var buf [resourceKeyBuffer]byte
			kb := append(append(append(buf[:0], req.Resource...), '/'), req.Subresource...)
			key = ix.resResources[string(kb)]
		} else {
			key = ix.resResources[req.Resource+"/"+req.Subresource]
		}
		filt = [6]int32{ix.resVerbs[req.Verb], ix.resVerbsAny, key, ix.resResourcesAny, ix.resGroups[req.APIGroup], ix.resGroupsAny}
		nf = 6
	} else {
		filt[0], filt[1] = ix.nonResVerbs[req.Verb], ix.nonResVerbsAny
		nf = 2
	}

	w := ix.words
	flat := ix.flat
	for word := 0; word < w; word++ {
		var cand uint64
		for _, k := range subj[:n] {
			cand |= flat[int(k)*w+word]
		}
		for i := 0; i < nf && cand != 0; i += 2 {
			cand &= flat[int(filt[i])*w+word] | flat[int(filt[i+1])*w+word]
		}
		for cand != 0 {
			r := word*64 + bits.TrailingZeros64(cand)
			if matchesRule(req, rules[r].rule) {
				return r
			}
			cand &= cand - 1
		}
	}
	return -1
}

func linearFirst(rules []compiledRule, req *Request) int {
	for i := range rules {
		if matchesRule(req, rules[i].rule) {
			return i
		}
	}
	return -1
}
