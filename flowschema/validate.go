package flowschema

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fairslice/fairslice/internal/k8sname"
	"github.com/fairslice/fairslice/shufflesharding"
)

// Limits of the API (k8s.io/kubernetes pkg/apis/flowcontrol).
const (
	MaxMatchingPrecedence = 10000
	MaxQueues             = 10_000_000
	totalAnnotationSize   = 256 * 1024
	// PreserveZeroSharesAnnotation is a v1beta3 round-trip key the API
	// forbids on stored objects.
	PreserveZeroSharesAnnotation = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"
)

var (
	supportedVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
	supportedKinds = []string{SubjectKindGroup, SubjectKindServiceAccount, SubjectKindUser}
	supportedDist  = []string{DistinguisherByNamespace, DistinguisherByUser}
	supportedTypes = []string{PriorityLevelTypeExempt, PriorityLevelTypeLimited}
	supportedLR    = []string{LimitResponseQueue, LimitResponseReject}
)

// Validate defaults a copy of cfg as the API server does and reports every
// problem the API server's validation (k8s.io/kubernetes v1.37.2
// pkg/apis/flowcontrol/validation) would refuse, plus duplicate names,
// all at once. It returns nil or an ErrorList.
func Validate(cfg *Config) error { return validateConfig(cfg, true) }

// ValidateAsStored is Validate for objects taken as the API server stores
// them (CompileOptions.AsStored): it applies no defaults first, so a field
// the defaults would have filled (queues 0, an empty limitResponse.type)
// is reported: the API server never stores it. An unset
// nominalConcurrencyShares still reads as its default.
func ValidateAsStored(cfg *Config) error { return validateConfig(cfg, false) }

func validateConfig(cfg *Config, defaults bool) error {
	cfg = cfg.DeepCopy()
	if defaults {
		cfg.SetDefaults()
	}
	var all ErrorList
	seen := map[string]bool{}
	for i := range cfg.FlowSchemas {
		fs := &cfg.FlowSchemas[i]
		all = append(all, ValidateFlowSchema(fs)...)
		if seen[fs.Name] {
			all = append(all, &FieldError{Kind: KindFS, Name: fs.Name, Type: ErrorTypeDuplicate, Field: "metadata.name", BadValue: fs.Name})
		}
		seen[fs.Name] = true
	}
	seen = map[string]bool{}
	for i := range cfg.PriorityLevels {
		pl := &cfg.PriorityLevels[i]
		all = append(all, ValidatePriorityLevelConfiguration(pl)...)
		if seen[pl.Name] {
			all = append(all, &FieldError{Kind: KindPL, Name: pl.Name, Type: ErrorTypeDuplicate, Field: "metadata.name", BadValue: pl.Name})
		}
		seen[pl.Name] = true
	}
	return all.Err()
}

// ValidateFlowSchema returns the problems of fs as the API server sees it,
// that is after defaulting (see FlowSchema.SetDefaults).
func ValidateFlowSchema(fs *FlowSchema) ErrorList {
	e := &errs{kind: KindFS, name: fs.Name}
	validateMeta(e, &fs.ObjectMeta)
	spec := path("spec")
	s := &fs.Spec
	prec := spec.child("matchingPrecedence")
	if s.MatchingPrecedence <= 0 {
		e.invalid(prec, s.MatchingPrecedence, "must be a positive value")
	}
	if s.MatchingPrecedence > MaxMatchingPrecedence {
		e.invalid(prec, s.MatchingPrecedence, fmt.Sprintf("must not be greater than %d", MaxMatchingPrecedence))
	}
	if s.MatchingPrecedence == 1 && fs.Name != FlowSchemaNameExempt {
		e.invalid(prec, s.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1")
	}
	if dm := s.DistinguisherMethod; dm != nil && !slices.Contains(supportedDist, dm.Type) {
		e.notSupported(spec.child("distinguisherMethod").child("type"), dm.Type, supportedDist)
	}
	plName := spec.child("priorityLevelConfiguration").child("name")
	if n := s.PriorityLevelConfiguration.Name; n != "" {
		for _, msg := range k8sname.DNS1123Subdomain(n) {
			e.invalid(plName, n, msg)
		}
	} else {
		e.required(plName, "must reference a priority level")
	}
	for i := range s.Rules {
		validateRule(e, &s.Rules[i], spec.child("rules").index(i))
	}
	if mand := mandatoryFS(fs.Name); mand != nil && !specEqual(fs.Spec, mand.Spec) {
		e.invalid(spec, "<spec>", fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name))
	}
	validateConditions(e, fs.Status.Conditions)
	return e.list
}

func mandatoryFS(name string) *FlowSchema {
	for _, fs := range MandatoryFlowSchemas() {
		if fs.Name == name {
			return &fs
		}
	}
	return nil
}

func mandatoryPL(name string) *PriorityLevelConfiguration {
	for _, pl := range MandatoryPriorityLevels() {
		if pl.Name == name {
			return &pl
		}
	}
	return nil
}

// specEqual is upstream's semantic equality: nil and empty lists are
// equal.
func specEqual(a, b any) bool { return cmp.Equal(a, b, cmpopts.EquateEmpty()) }

func validateMeta(e *errs, m *ObjectMeta) {
	meta := path("metadata")
	if m.GenerateName != "" {
		for _, msg := range k8sname.DNS1123Subdomain(k8sname.MaskTrailingDash(m.GenerateName)) {
			e.invalid(meta.child("generateName"), m.GenerateName, msg)
		}
	}
	if m.Name == "" {
		e.required(meta.child("name"), "name or generateName is required")
	} else {
		for _, msg := range k8sname.DNS1123Subdomain(m.Name) {
			e.invalid(meta.child("name"), m.Name, msg)
		}
	}
	if m.Namespace != "" {
		e.forbidden(meta.child("namespace"), "not allowed on this type")
	}
	if m.Generation < 0 {
		e.invalid(meta.child("generation"), m.Generation, "must be greater than or equal to 0")
	}
	for _, k := range sortedKeys(m.Labels) {
		for _, msg := range k8sname.QualifiedName(k) {
			e.invalid(meta.child("labels"), k, msg)
		}
		for _, msg := range k8sname.LabelValue(m.Labels[k]) {
			e.invalid(meta.child("labels"), m.Labels[k], msg)
		}
	}
	size := 0
	for _, k := range sortedKeys(m.Annotations) {
		for _, msg := range k8sname.QualifiedName(strings.ToLower(k)) {
			e.invalid(meta.child("annotations"), k, msg)
		}
		size += len(k) + len(m.Annotations[k])
	}
	if size > totalAnnotationSize {
		e.add(ErrorTypeInvalid, meta.child("annotations"), size, fmt.Sprintf("may not be more than %d bytes", totalAnnotationSize))
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func validateRule(e *errs, r *PolicyRulesWithSubjects, p path) {
	if len(r.Subjects) == 0 {
		e.required(p.child("subjects"), "subjects must contain at least one value")
	}
	for i := range r.Subjects {
		validateSubject(e, &r.Subjects[i], p.child("subjects").index(i))
	}
	if len(r.ResourceRules) == 0 && len(r.NonResourceRules) == 0 {
		e.required(p, "at least one of resourceRules and nonResourceRules has to be non-empty")
	}
	for i := range r.ResourceRules {
		validateResourceRule(e, &r.ResourceRules[i], p.child("resourceRules").index(i))
	}
	for i := range r.NonResourceRules {
		validateNonResourceRule(e, &r.NonResourceRules[i], p.child("nonResourceRules").index(i))
	}
}

func validateSubject(e *errs, s *Subject, p path) {
	forbidUser := func() {
		if s.User != nil {
			e.forbidden(p.child("user"), "user is forbidden when subject kind is not 'User'")
		}
	}
	forbidGroup := func() {
		if s.Group != nil {
			e.forbidden(p.child("group"), "group is forbidden when subject kind is not 'Group'")
		}
	}
	forbidSA := func() {
		if s.ServiceAccount != nil {
			e.forbidden(p.child("serviceAccount"), "serviceAccount is forbidden when subject kind is not 'ServiceAccount'")
		}
	}
	switch s.Kind {
	case SubjectKindServiceAccount:
		sp := p.child("serviceAccount")
		if sa := s.ServiceAccount; sa == nil {
			e.required(sp, "serviceAccount is required when subject kind is 'ServiceAccount'")
		} else {
			if sa.Name == "" {
				e.required(sp.child("name"), "")
			} else if sa.Name != NameAll {
				for _, msg := range k8sname.DNS1123Subdomain(sa.Name) {
					e.invalid(sp.child("name"), sa.Name, msg)
				}
			}
			if sa.Namespace != "" {
				for _, msg := range k8sname.DNS1123Label(sa.Namespace) {
					e.invalid(sp.child("namespace"), sa.Namespace, msg)
				}
			} else {
				e.required(sp.child("namespace"), "must specify namespace for service account")
			}
		}
		forbidUser()
		forbidGroup()
	case SubjectKindUser:
		if s.User == nil {
			e.required(p.child("user"), "user is required when subject kind is 'User'")
		} else if s.User.Name == "" {
			e.required(p.child("user").child("name"), "")
		}
		forbidSA()
		forbidGroup()
	case SubjectKindGroup:
		if s.Group == nil {
			e.required(p.child("group"), "group is required when subject kind is 'Group'")
		} else if s.Group.Name == "" {
			e.required(p.child("group").child("name"), "")
		}
		forbidSA()
		forbidUser()
	default:
		e.notSupported(p.child("kind"), s.Kind, supportedKinds)
	}
}

func validateVerbs(e *errs, verbs []string, p path) {
	switch {
	case len(verbs) == 0:
		e.required(p, "verbs must contain at least one value")
	case slices.Contains(verbs, VerbAll):
		if len(verbs) > 1 {
			e.invalid(p, verbs, "if '*' is present, must not specify other verbs")
		}
	default:
		for _, v := range verbs {
			if !slices.Contains(supportedVerbs, v) {
				e.notSupported(p, verbs, supportedVerbs)
				return
			}
		}
	}
}

func validateResourceRule(e *errs, r *ResourcePolicyRule, p path) {
	validateVerbs(e, r.Verbs, p.child("verbs"))
	if len(r.APIGroups) == 0 {
		e.required(p.child("apiGroups"), "resource rules must supply at least one api group")
	} else if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, APIGroupAll) {
		e.invalid(p.child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other api groups")
	}
	if len(r.Resources) == 0 {
		e.required(p.child("resources"), "resource rules must supply at least one resource")
	} else if len(r.Resources) > 1 && slices.Contains(r.Resources, ResourceAll) {
		e.invalid(p.child("resources"), r.Resources, "if '*' is present, must not specify other resources")
	}
	ns := p.child("namespaces")
	switch {
	case len(r.Namespaces) == 0 && !r.ClusterScope:
		e.required(ns, "resource rules that are not cluster scoped must supply at least one namespace")
	case slices.Contains(r.Namespaces, NamespaceEvery):
		if len(r.Namespaces) > 1 {
			e.invalid(ns, r.Namespaces, "if '*' is present, must not specify other namespaces")
		}
	default:
		for i, n := range r.Namespaces {
			for _, msg := range k8sname.DNS1123Label(n) {
				e.invalid(ns.index(i), n, "each member of this list must be '*' or a DNS-1123 label; "+msg)
			}
		}
	}
}

func validateNonResourceRule(e *errs, r *NonResourcePolicyRule, p path) {
	validateVerbs(e, r.Verbs, p.child("verbs"))
	urls := p.child("nonResourceURLs")
	switch {
	case len(r.NonResourceURLs) == 0:
		e.required(urls, "nonResourceURLs must contain at least one value")
	case slices.Contains(r.NonResourceURLs, NonResourceAll):
		if len(r.NonResourceURLs) > 1 {
			e.invalid(urls, r.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs")
		}
	default:
		for i, u := range r.NonResourceURLs {
			if msg := nonResourceURLProblem(u); msg != "" {
				e.invalid(urls.index(i), u, msg)
			}
		}
	}
}

// nonResourceURLProblem is upstream's ValidateNonResourceURLPath.
func nonResourceURLProblem(u string) string {
	switch {
	case u == "":
		return "must not be empty"
	case u == "/":
		return ""
	case !strings.HasPrefix(u, "/"):
		return "must start with slash"
	case strings.Contains(u, " "):
		return "must not contain white-space"
	case strings.Contains(u, "//"):
		return "must not contain double slash"
	}
	if n := strings.Count(u, "*"); n > 1 || n == 1 && !strings.HasSuffix(u, "/*") {
		return "wildcard can only do suffix matching"
	}
	return ""
}

func validateConditions(e *errs, conds []Condition) {
	seen := map[string]bool{}
	for i, c := range conds {
		p := path("status").child("conditions").index(i).child("type")
		if seen[c.Type] {
			e.duplicate(p, c.Type)
		}
		seen[c.Type] = true
		if c.Type == "" {
			e.required(p, "")
		}
	}
}

// ValidatePriorityLevelConfiguration returns the problems of pl as the API
// server sees it, that is after defaulting (see
// PriorityLevelConfiguration.SetDefaults).
func ValidatePriorityLevelConfiguration(pl *PriorityLevelConfiguration) ErrorList {
	e := &errs{kind: KindPL, name: pl.Name}
	validateMeta(e, &pl.ObjectMeta)
	if _, ok := pl.Annotations[PreserveZeroSharesAnnotation]; ok {
		e.forbidden(path("metadata").child("annotations"), fmt.Sprintf("annotation '%s' is forbidden", PreserveZeroSharesAnnotation))
	}
	spec := path("spec")
	s := &pl.Spec
	if (pl.Name == PriorityLevelNameExempt) != (s.Type == PriorityLevelTypeExempt) {
		e.invalid(spec.child("type"), s.Type, "must be 'Exempt' if and only if `name` is 'exempt'")
	}
	switch s.Type {
	case PriorityLevelTypeExempt:
		if s.Limited != nil {
			e.forbidden(spec.child("limited"), "must be nil if the type is not Limited")
		}
		if x := s.Exempt; x != nil {
			ep := spec.child("exempt")
			if x.NominalConcurrencyShares != nil && *x.NominalConcurrencyShares < 0 {
				e.invalid(ep.child("nominalConcurrencyShares"), *x.NominalConcurrencyShares, "must be a non-negative integer")
			}
			if x.LendablePercent != nil && (*x.LendablePercent < 0 || *x.LendablePercent > 100) {
				e.invalid(ep.child("lendablePercent"), *x.LendablePercent, "must be between 0 and 100, inclusive")
			}
		}
	case PriorityLevelTypeLimited:
		if s.Exempt != nil {
			e.forbidden(spec.child("exempt"), "must be nil if the type is Limited")
		}
		if s.Limited == nil {
			e.required(spec.child("limited"), "must not be empty when type is Limited")
		} else {
			validateLimited(e, s.Limited, spec.child("limited"))
		}
	case "":
		e.required(spec.child("type"), "")
	default:
		e.notSupported(spec.child("type"), s.Type, supportedTypes)
	}
	if mand := mandatoryPL(pl.Name); mand != nil {
		if pl.Name == PriorityLevelNameExempt {
			have := *pl.DeepCopy()
			have.Spec.Exempt = mand.Spec.Exempt
			if !specEqual(have.Spec, mand.Spec) {
				e.invalid(spec, "<spec>", fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name))
			}
		} else if !specEqual(pl.Spec, mand.Spec) {
			e.invalid(spec, "<spec>", fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name))
		}
	}
	validateConditions(e, pl.Status.Conditions)
	return e.list
}

func validateLimited(e *errs, l *LimitedPriorityLevelConfiguration, p path) {
	// The internal type holds the defaulted value; unset reads as 30.
	if ncs := deref(l.NominalConcurrencyShares, DefaultNominalConcurrencyShares); ncs < 0 {
		e.invalid(p.child("nominalConcurrencyShares"), ncs, "must be a non-negative integer")
	}
	lr := p.child("limitResponse")
	switch l.LimitResponse.Type {
	case LimitResponseReject:
		if l.LimitResponse.Queuing != nil {
			e.forbidden(lr.child("queuing"), "must be nil if limited.limitResponse.type is not Limited")
		}
	case LimitResponseQueue:
		if q := l.LimitResponse.Queuing; q == nil {
			e.required(lr.child("queuing"), "must not be empty if limited.limitResponse.type is Limited")
		} else {
			validateQueuing(e, q, lr.child("queuing"))
		}
	case "":
		e.required(lr.child("type"), "")
	default:
		e.notSupported(lr.child("type"), l.LimitResponse.Type, supportedLR)
	}
	if v := l.LendablePercent; v != nil && (*v < 0 || *v > 100) {
		e.invalid(p.child("lendablePercent"), *v, "must be between 0 and 100, inclusive")
	}
	if v := l.BorrowingLimitPercent; v != nil && *v < 0 {
		e.invalid(p.child("borrowingLimitPercent"), *v, "if specified, must be a non-negative integer")
	}
}

func validateQueuing(e *errs, q *QueuingConfiguration, p path) {
	if q.QueueLengthLimit <= 0 {
		e.invalid(p.child("queueLengthLimit"), q.QueueLengthLimit, "must be positive")
	}
	if q.Queues <= 0 {
		e.invalid(p.child("queues"), q.Queues, "must be positive")
	} else if q.Queues > MaxQueues {
		e.invalid(p.child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", MaxQueues))
	}
	hs := p.child("handSize")
	switch {
	case q.HandSize <= 0:
		e.invalid(hs, q.HandSize, "must be positive")
	case q.HandSize > q.Queues:
		e.invalid(hs, q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues))
	case shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)) > shufflesharding.MaxHashBits:
		e.invalid(hs, q.HandSize, fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d",
			q.Queues, q.HandSize, shufflesharding.MaxHashBits))
	}
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
