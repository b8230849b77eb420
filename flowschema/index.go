package flowschema

import (
	"math/bits"
	"slices"
	"strings"
	"unsafe"
)

// index finds the first rule (in matching order) that matches a request.
//
// Every rule has a bit, in matching order. For each attribute value that
// occurs in the configuration (a user name, a group, a service-account
// namespace, a verb, a resource key, an API group) the index keeps the set
// of rules that could match a request with that value, plus a set for the
// rules that accept any value. A request's candidates are the intersection
// of a few unions of these sets and of the set of rules that have a rule
// of the request's kind (resource or non-resource); they are a superset of
// the matching rules, so each candidate, in order, is verified with the
// exact predicates, and the first that passes wins. A candidate that
// matches every request of its kind (an all-wildcard rule, as most
// bootstrap FlowSchemas have) needs no verification. The sets are scanned
// a word (64 rules) at a time, stopping at the first word holding a
// verified match, so no scratch memory is needed; a summary bitmap per set
// (a bit per non-zero word) skips the words no subject set touches, so a
// request costs about the same with 10 or 10,000 FlowSchemas.
type index struct {
	words int
	flat  []uint64 // set k is flat[k*words:(k+1)*words]; set 0 is empty
	// summary has a bit per word of each set, set when the word is not
	// zero: set k's are summary[k*sumWords:(k+1)*sumWords]. The scan
	// visits only words some subject set has bits in.
	summary  []uint64
	sumWords int

	users, groups, saNamespaces keySet
	subjectsAny                 int32

	resVerbs, resResources, resGroups keySet
	resVerbsAny, resResourcesAny      int32
	resGroupsAny                      int32

	nonResVerbs    keySet
	nonResVerbsAny int32

	// Per request kind (resource, non-resource): some holds the rules
	// with a rule of that kind, the only ones that can match; sure holds
	// those that match every request of that kind once a subject matches
	// (an all-wildcard rule and a subject the index decides exactly), so
	// a candidate in sure needs no verification.
	resSome, resSure       int32
	nonResSome, nonResSure int32
}

// keySet maps attribute values to set numbers (0 when absent). It is an
// open-addressing table hashed on the length and the first and last eight
// bytes of a value, which costs two loads instead of hashing the whole
// string; if values collide too much under that hash (long values that
// differ only in the middle), it falls back to a Go map.
type keySet struct {
	m      map[string]int32 // while building, and as the fallback
	useMap bool
	mask   uint64
	// lengths has bit len%64 set for every key: a value whose bit is clear
	// is absent without hashing it.
	lengths uint64
	slots   []keySlot
}

// keySlot is an entry of a keySet table: the key, its length, the two
// words its hash reads and its middle word (see midWord), which together
// decide equality for keys of up to 24 bytes without comparing the
// strings, and its set (0 for an empty slot).
type keySlot struct {
	a, b, c uint64
	n       int32
	set     int32
	key     string
}

// midWordMax is the longest key whose equality the words of a keySlot
// decide.
const midWordMax = 24

// midWord returns bytes 8 to 15 of a key of more than 16 bytes, which
// with the first and last 8 cover a key of up to midWordMax bytes, or 0.
func midWord(s string) uint64 {
	if len(s) > 16 {
		return load8(s, 8)
	}
	return 0
}

// maxSubjectSets bounds the subject sets a request unions (any, user,
// service-account namespace and the groups that occur in the
// configuration) in a configuration of more than 64 rules; a request
// beyond it is classified by a linear scan.
const maxSubjectSets = 16

// maxProbe is the longest probe sequence tolerated before falling back to
// a map.
const maxProbe = 8

func keyHash(s string) uint64 { return quickHash(s) }

func (k *keySet) freeze() {
	if len(k.m) == 0 {
		k.m = nil
		return
	}
	size := 4
	for size < 2*len(k.m) {
		size *= 2
	}
	k.mask = uint64(size - 1)
	k.slots = make([]keySlot, size)
	for key := range k.m {
		k.lengths |= 1 << (len(key) % 64)
	}
	for key, set := range k.m {
		a, b := hashWords(key)
		i, probes := keyHash(key)&k.mask, 1
		for k.slots[i].set != 0 {
			i, probes = (i+1)&k.mask, probes+1
		}
		if probes > maxProbe {
			k.useMap, k.slots = true, nil
			return
		}
		k.slots[i] = keySlot{a: a, b: b, c: midWord(key), n: int32(len(key)), set: set, key: key}
	}
	k.m = nil
}

// get returns the set of s, or 0. The length check inlines, so most
// absent values cost no call.
func (k *keySet) get(s string) int32 {
	if k.lengths&(1<<(len(s)%64)) == 0 {
		return 0
	}
	return k.lookup(s)
}

func (k *keySet) lookup(s string) int32 {
	if k.slots == nil {
		if k.useMap {
			return k.m[s]
		}
		return 0
	}
	n := len(s)
	// quickHash, by hand: this is the hottest call of a classification.
	var a, b uint64
	switch {
	case n >= 8:
		a, b = load8(s, 0), load8(s, n-8)
	case n >= 4:
		a, b = load4(s, 0), load4(s, n-4)
	case n > 0:
		a = uint64(s[0])<<16 | uint64(s[n/2])<<8 | uint64(s[n-1])
	}
	c := midWord(s)
	slots := k.slots
	for i := mixWords(a, b, n) & k.mask; ; i = (i + 1) & k.mask {
		sl := &slots[i]
		if sl.set == 0 {
			return 0
		}
		// a, b, c and the length cover every byte of a key of up to
		// midWordMax bytes; longer keys compare the strings.
		if sl.a == a && sl.b == b && sl.c == c && int(sl.n) == n && (n <= midWordMax || sl.key == s) {
			return sl.set
		}
	}
}

// getResource looks up resource or resource/subresource.
func (k *keySet) getResource(resource, subresource string) int32 {
	if subresource == "" {
		return k.get(resource)
	}
	if n := len(resource) + 1 + len(subresource); n <= resourceKeyBuffer {
		var buf [resourceKeyBuffer]byte
		copy(buf[copy(buf[:], resource)+1:], subresource)
		buf[len(resource)] = '/'
		// A view of buf for the lookup, which does not retain it.
		return k.get(unsafe.String(&buf[0], n))
	}
	return k.get(resource + "/" + subresource)
}

type indexBuilder struct {
	ix   *index
	sets [][]uint64
}

func (b *indexBuilder) newSet() int32 {
	b.sets = append(b.sets, make([]uint64, b.ix.words))
	return int32(len(b.sets) - 1)
}

func (b *indexBuilder) add(ks *keySet, key string, rule int) {
	k, ok := ks.m[key]
	if !ok {
		k = b.newSet()
		ks.m[key] = k
	}
	b.set(k, rule)
}

func (b *indexBuilder) set(k int32, rule int) { b.sets[k][rule/64] |= 1 << (rule % 64) }

// addList indexes a list of values with upstream's wildcard rule: the
// wildcard means "any" only as the sole member; otherwise every member,
// the wildcard string included, is a literal.
func (b *indexBuilder) addList(m *keySet, anySet int32, list []string, wildcard string, rule int) {
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
		users:        keySet{m: map[string]int32{}},
		groups:       keySet{m: map[string]int32{}},
		saNamespaces: keySet{m: map[string]int32{}},
		resVerbs:     keySet{m: map[string]int32{}},
		resResources: keySet{m: map[string]int32{}},
		resGroups:    keySet{m: map[string]int32{}},
		nonResVerbs:  keySet{m: map[string]int32{}},
	}
	b := &indexBuilder{ix: &ix}
	b.newSet() // the empty set
	ix.subjectsAny, ix.resVerbsAny, ix.resResourcesAny, ix.resGroupsAny, ix.nonResVerbsAny =
		b.newSet(), b.newSet(), b.newSet(), b.newSet(), b.newSet()
	ix.resSome, ix.resSure, ix.nonResSome, ix.nonResSure = b.newSet(), b.newSet(), b.newSet(), b.newSet()
	for r := range rules {
		b.addRule(r, &rules[r])
	}
	for _, ks := range []*keySet{&ix.users, &ix.groups, &ix.saNamespaces, &ix.resVerbs, &ix.resResources, &ix.resGroups, &ix.nonResVerbs} {
		ks.freeze()
	}
	ix.flatten(b.sets)
	return ix
}

// addRule adds rule r to the index's sets.
func (b *indexBuilder) addRule(r int, cr *compiledRule) {
	if len(cr.rule.ResourceRules) > 0 {
		b.set(b.ix.resSome, r)
	}
	if len(cr.rule.NonResourceRules) > 0 {
		b.set(b.ix.nonResSome, r)
	}
	if cr.subjectExact && slices.ContainsFunc(cr.rule.ResourceRules, matchesEveryResource) {
		b.set(b.ix.resSure, r)
	}
	if cr.subjectExact && slices.ContainsFunc(cr.rule.NonResourceRules, matchesEveryNonResource) {
		b.set(b.ix.nonResSure, r)
	}
	for _, s := range cr.rule.Subjects {
		b.addSubject(s, r)
	}
	for _, rr := range cr.rule.ResourceRules {
		b.addList(&b.ix.resVerbs, b.ix.resVerbsAny, rr.Verbs, VerbAll, r)
		b.addList(&b.ix.resResources, b.ix.resResourcesAny, rr.Resources, ResourceAll, r)
		b.addList(&b.ix.resGroups, b.ix.resGroupsAny, rr.APIGroups, APIGroupAll, r)
	}
	for _, nr := range cr.rule.NonResourceRules {
		b.addList(&b.ix.nonResVerbs, b.ix.nonResVerbsAny, nr.Verbs, VerbAll, r)
	}
}

// addSubject adds subject s of rule r to the index's subject sets.
func (b *indexBuilder) addSubject(s Subject, r int) {
	switch s.Kind {
	case SubjectKindUser:
		if s.User != nil {
			b.addName(&b.ix.users, s.User.Name, r)
		}
	case SubjectKindGroup:
		if s.Group != nil {
			b.addName(&b.ix.groups, s.Group.Name, r)
		}
	case SubjectKindServiceAccount:
		sa := s.ServiceAccount
		switch {
		case sa == nil:
		case strings.Contains(sa.Namespace, ":"):
			// Not a namespace a user name can be split into;
			// leave it to verification.
			b.set(b.ix.subjectsAny, r)
		case sa.Name == NameAll:
			b.add(&b.ix.saNamespaces, sa.Namespace, r)
		default:
			b.add(&b.ix.users, ServiceAccountUsernamePrefix+sa.Namespace+":"+sa.Name, r)
		}
	}
}

// addName adds rule r under a user or group name to m, or to the
// any-subject set for the name "*".
func (b *indexBuilder) addName(m *keySet, name string, r int) {
	if name == NameAll {
		b.set(b.ix.subjectsAny, r)
	} else {
		b.add(m, name, r)
	}
}

// flatten lays the sets out in ix.flat and marks their non-zero words in
// ix.summary.
func (ix *index) flatten(sets [][]uint64) {
	ix.flat = make([]uint64, 0, len(sets)*ix.words)
	ix.sumWords = (ix.words + 63) / 64
	ix.summary = make([]uint64, len(sets)*ix.sumWords)
	for k, s := range sets {
		ix.flat = append(ix.flat, s...)
		for w, bits := range s {
			if bits != 0 {
				ix.summary[k*ix.sumWords+w/64] |= 1 << (w % 64)
			}
		}
	}
}

// matchesEveryResource reports whether rr matches every resource request:
// wildcard verbs, API groups and resources, every namespace, and cluster
// scope too.
func matchesEveryResource(rr ResourcePolicyRule) bool {
	sole := func(list []string, wildcard string) bool { return len(list) == 1 && list[0] == wildcard }
	return rr.ClusterScope && sole(rr.Verbs, VerbAll) && sole(rr.APIGroups, APIGroupAll) &&
		sole(rr.Resources, ResourceAll) && sole(rr.Namespaces, NamespaceEvery)
}

// matchesEveryNonResource reports whether nr matches every non-resource
// request: wildcard verbs and a "*" URL.
func matchesEveryNonResource(nr NonResourcePolicyRule) bool {
	return len(nr.Verbs) == 1 && nr.Verbs[0] == VerbAll && slices.Contains(nr.NonResourceURLs, NonResourceAll)
}

// resourceKeyBuffer bounds the resource/subresource keys looked up without
// allocating.
const resourceKeyBuffer = 128

// first returns the index in rules of the first rule that matches req, or
// -1.
func (ix *index) first(rules []compiledRule, req *Request) int {
	if ix.words == 1 {
		return ix.firstInWord(rules, req)
	}
	var subj [maxSubjectSets]int32
	n := 0
	subj[n] = ix.subjectsAny
	n++
	if k := ix.users.get(req.User); k != 0 {
		subj[n] = k
		n++
	}
	if k := ix.saNamespaceSet(req.User); k != 0 {
		subj[n] = k
		n++
	}
	for _, g := range req.Groups {
		if k := ix.groups.get(g); k != 0 {
			if n == maxSubjectSets {
				return linearFirst(rules, req)
			}
			subj[n] = k
			n++
		}
	}

	// The attribute filters, pairs of (value set, any set), are looked up
	// only when a word holds many subject candidates: a few candidates
	// are cheaper to verify in full than three more lookups.
	var filt [6]int32
	nf := -1
	w := ix.words
	flat := ix.flat
	some, sure := ix.nonResSome, ix.nonResSure
	if req.ResourceRequest {
		some, sure = ix.resSome, ix.resSure
	}
	sw := ix.sumWords
	for sword := 0; sword < sw; sword++ {
		var words uint64
		for _, k := range subj[:n] {
			words |= ix.summary[int(k)*sw+sword]
		}
		for ; words != 0; words &= words - 1 {
			word := sword*64 + bits.TrailingZeros64(words)
			var cand uint64
			for _, k := range subj[:n] {
				cand |= flat[int(k)*w+word]
			}
			cand &= flat[int(some)*w+word]
			if nf < 0 && bits.OnesCount64(cand) > lazyFilterCandidates {
				nf = ix.filters(req, &filt)
			}
			for i := 0; i < nf && cand != 0; i += 2 {
				cand &= flat[int(filt[i])*w+word] | flat[int(filt[i+1])*w+word]
			}
			for cand != 0 {
				bit := bits.TrailingZeros64(cand)
				r := word*64 + bit
				if flat[int(sure)*w+word]&(1<<bit) != 0 || verify(req, &rules[r], nf >= 0) {
					return r
				}
				cand &= cand - 1
			}
		}
	}
	return -1
}

// firstInWord is first for up to 64 rules (the default configuration has
// 11): the sets are single words, unioned as they are looked up (set 0,
// for an absent value, is empty), with no summary and no bound on the
// request's groups.
func (ix *index) firstInWord(rules []compiledRule, req *Request) int {
	flat := ix.flat
	cand := flat[ix.subjectsAny] | flat[ix.users.get(req.User)] | flat[ix.saNamespaceSet(req.User)]
	for _, g := range req.Groups {
		cand |= flat[ix.groups.get(g)]
	}
	some, sure := ix.nonResSome, ix.nonResSure
	if req.ResourceRequest {
		some, sure = ix.resSome, ix.resSure
	}
	cand &= flat[some]
	nf := -1
	if bits.OnesCount64(cand) > lazyFilterCandidates {
		var filt [6]int32
		nf = ix.filters(req, &filt)
		for i := 0; i < nf; i += 2 {
			cand &= flat[filt[i]] | flat[filt[i+1]]
		}
	}
	for ; cand != 0; cand &= cand - 1 {
		r := bits.TrailingZeros64(cand)
		if flat[sure]&(1<<r) != 0 || verify(req, &rules[r], nf >= 0) {
			return r
		}
	}
	return -1
}

// saNamespaceSet returns the set of the service-account namespace of
// user, when user is a service account's and its namespace occurs in the
// configuration, else 0.
func (ix *index) saNamespaceSet(user string) int32 {
	if ix.saNamespaces.lengths == 0 {
		return 0
	}
	rest, ok := strings.CutPrefix(user, ServiceAccountUsernamePrefix)
	if !ok {
		return 0
	}
	i := strings.IndexByte(rest, ':')
	if i < 0 {
		return 0
	}
	return ix.saNamespaces.get(rest[:i])
}

// lazyFilterCandidates is the number of subject candidates in a word above
// which first looks up the attribute filters.
const lazyFilterCandidates = 6

// filters fills filt with the (value, any) set pairs of req's attributes
// and returns how many entries it used.
func (ix *index) filters(req *Request, filt *[6]int32) int {
	if req.ResourceRequest {
		*filt = [6]int32{ix.resVerbs.get(req.Verb), ix.resVerbsAny, ix.resResources.getResource(req.Resource, req.Subresource),
			ix.resResourcesAny, ix.resGroups.get(req.APIGroup), ix.resGroupsAny}
		return 6
	}
	filt[0], filt[1] = ix.nonResVerbs.get(req.Verb), ix.nonResVerbsAny
	return 2
}

// verify checks a candidate rule exactly, given what the index already
// established: a subject matches (exactly, for subjectExact rules) and,
// when filtered, some resource rule accepts the verb, some the resource and
// some the API group (or, for a non-resource request, some non-resource
// rule the verb). With a single resource or non-resource rule those "some"
// are the same rule, so only the namespace or the path is left to check.
func verify(req *Request, cr *compiledRule, filtered bool) bool {
	r := cr.rule
	if !cr.subjectExact && firstSubject(req, r.Subjects) < 0 {
		return false
	}
	if req.ResourceRequest {
		if filtered && len(r.ResourceRules) == 1 {
			rr := &r.ResourceRules[0]
			if req.Namespace == "" {
				return rr.ClusterScope
			}
			return listHas(rr.Namespaces, req.Namespace, NamespaceEvery)
		}
		return firstResourceRule(req, r.ResourceRules) >= 0
	}
	if filtered && len(r.NonResourceRules) == 1 {
		return urlsMatch(r.NonResourceRules[0].NonResourceURLs, req.Path)
	}
	return firstNonResourceRule(req, r.NonResourceRules) >= 0
}

func linearFirst(rules []compiledRule, req *Request) int {
	for i := range rules {
		if matchesRule(req, rules[i].rule) {
			return i
		}
	}
	return -1
}
