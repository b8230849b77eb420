package flowschema

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fairslice/fairslice/shufflesharding"
)

// Classifier assigns requests to a FlowSchema, a priority level and a
// flow, as an API server's APF controller does with the same objects.
//
// Compile builds it once; Classify then answers from an index in time
// roughly proportional to the number of rules that share the request's
// user, groups, verb, resource and API group, not to the number of
// FlowSchemas, and without allocating. A Classifier is immutable and safe
// for concurrent use.
type Classifier struct {
	schemas  []FlowSchema // effective matching order
	imagined []bool       // per schema: a mandatory object added by Compile
	levels   []PriorityLevelConfiguration
	levelImg []bool
	ignored  []IgnoredLevel
	dangling []DanglingSchema

	cs       []compiledSchema
	rules    []compiledRule // all rules of all schemas, in matching order
	catchAll int            // index in schemas of the catch-all fallback
	idx      index
	hashes   *flowHashCache
}

// IgnoredLevel is a priority level Compile left out because upstream's
// controller would ignore it (a broken union, type Exempt not named exempt
// or the reverse, or a queuing configuration the shuffle-sharding dealer
// rejects).
type IgnoredLevel struct {
	Name   string
	Reason string
}

// DanglingSchema is a FlowSchema that references a priority level the
// configuration lacks (or that was ignored); upstream skips it.
type DanglingSchema struct {
	Name          string
	PriorityLevel string
}

type distinguisherKind uint8

const (
	distNone distinguisherKind = iota
	distUser
	distNamespace
)

type compiledSchema struct {
	name    string // the FlowSchema's
	level   int
	lname   string // the level's
	dist    distinguisherKind
	hasFlow bool
	exempt  bool
}

type compiledRule struct {
	schema int
	index  int // in the schema's rules
	rule   *PolicyRulesWithSubjects
	// subjectExact: the index's subject sets are exact for this rule (no
	// service-account namespace containing ":"), so a candidate's subject
	// needs no second check.
	subjectExact bool
}

// CompileOptions are the choices of CompileWith. The zero value is
// Compile's behaviour.
type CompileOptions struct {
	// AsStored takes the objects as the API server stores them, which is
	// how upstream's controller uses what its informers deliver: no v1
	// defaults are applied, so a zero queues count, a zero hand size or
	// queue length limit, an empty limitResponse.type and a
	// matchingPrecedence of 0 are used as they are. Set it for objects
	// read from an API server or a (fake) clientset; leave it unset for
	// objects written by hand or read from files, where an omitted field
	// means its default. The only field still read as its default is an
	// unset nominalConcurrencyShares of a Limited level, on which
	// upstream's controller crashes (see ComputeLimits).
	AsStored bool
}

// Compile builds a Classifier from cfg, which it does not retain or
// modify. Like the API server, it applies the v1 defaults to its copy
// (CompileWith with CompileOptions.AsStored does not), ignores broken
// priority levels (IgnoredLevels), skips FlowSchemas whose priority level
// does not exist (DanglingSchemas) — checking references before adding
// missing mandatory levels, as upstream does — and then adds the mandatory
// exempt and catch-all objects that cfg lacks. It fails only when two
// objects of a kind share a name (upstream's controller panics on
// duplicate FlowSchemas). cfg need not be valid; Validate reports what the
// API server would refuse.
func Compile(cfg *Config) (*Classifier, error) { return CompileWith(cfg, CompileOptions{}) }

// CompileWith is Compile with options.
func CompileWith(cfg *Config, opts CompileOptions) (*Classifier, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	cfg = cfg.DeepCopy()
	if !opts.AsStored {
		cfg.SetDefaults()
	}
	if err := checkUniqueNames(cfg); err != nil {
		return nil, err
	}
	c := &Classifier{}
	levelByName := c.keepLevels(cfg.PriorityLevels)
	c.keepSchemas(cfg.FlowSchemas, levelByName)
	for _, proto := range []PriorityLevelConfiguration{mandatoryPLExempt(), mandatoryPLCatchAll()} {
		if _, ok := levelByName[proto.Name]; !ok {
			levelByName[proto.Name] = len(c.levels)
			c.levels = append(c.levels, proto)
			c.levelImg = append(c.levelImg, true)
		}
	}
	c.compileSchemas(levelByName)
	c.idx = buildIndex(c.rules)
	c.hashes = newFlowHashCache()
	return c, nil
}

// keepLevels keeps the priority levels that are not broken (recording the
// others as ignored) and returns the index of each kept one by name.
func (c *Classifier) keepLevels(levels []PriorityLevelConfiguration) map[string]int {
	levelByName := map[string]int{}
	for i := range levels {
		pl := &levels[i]
		if reason := brokenLevel(pl); reason != "" {
			c.ignored = append(c.ignored, IgnoredLevel{Name: pl.Name, Reason: reason})
			continue
		}
		levelByName[pl.Name] = len(c.levels)
		c.levels = append(c.levels, *pl)
		c.levelImg = append(c.levelImg, false)
	}
	return levelByName
}

// keepSchemas keeps the flow schemas whose priority level was kept
// (recording the others as dangling), in matching order, between the
// mandatory exempt and catch-all schemas when the configuration lacks them.
func (c *Classifier) keepSchemas(schemas []FlowSchema, levelByName map[string]int) {
	var kept []FlowSchema
	var haveExempt, haveCatchAll bool
	for i := range schemas {
		fs := &schemas[i]
		if _, ok := levelByName[fs.Spec.PriorityLevelConfiguration.Name]; !ok {
			c.dangling = append(c.dangling, DanglingSchema{Name: fs.Name, PriorityLevel: fs.Spec.PriorityLevelConfiguration.Name})
			continue
		}
		kept = append(kept, *fs)
		haveExempt = haveExempt || fs.Name == FlowSchemaNameExempt
		haveCatchAll = haveCatchAll || fs.Name == FlowSchemaNameCatchAll
	}
	slices.SortFunc(kept, func(a, b FlowSchema) int {
		return cmp.Or(cmp.Compare(a.Spec.MatchingPrecedence, b.Spec.MatchingPrecedence), cmp.Compare(a.Name, b.Name))
	})
	if !haveExempt {
		c.schemas, c.imagined = append(c.schemas, mandatoryFSExempt()), append(c.imagined, true)
	}
	for _, fs := range kept {
		c.schemas, c.imagined = append(c.schemas, fs), append(c.imagined, false)
	}
	if !haveCatchAll {
		c.schemas, c.imagined = append(c.schemas, mandatoryFSCatchAll()), append(c.imagined, true)
	}
}

// compileSchemas compiles each schema's level, flow distinguisher and
// rules, and finds the catch-all.
func (c *Classifier) compileSchemas(levelByName map[string]int) {
	c.catchAll = -1
	c.cs = make([]compiledSchema, len(c.schemas))
	for i := range c.schemas {
		fs := &c.schemas[i]
		if fs.Name == FlowSchemaNameCatchAll && c.catchAll < 0 {
			c.catchAll = i
		}
		li := levelByName[fs.Spec.PriorityLevelConfiguration.Name]
		pl := &c.levels[li]
		cs := compiledSchema{name: fs.Name, level: li, lname: pl.Name, exempt: pl.Spec.Type == PriorityLevelTypeExempt}
		if !cs.exempt && pl.Spec.Limited.LimitResponse.Type == LimitResponseQueue && pl.Spec.Limited.LimitResponse.Queuing.Queues > 1 {
			cs.hasFlow = true
		}
		if dm := fs.Spec.DistinguisherMethod; dm != nil {
			switch dm.Type {
			case DistinguisherByUser:
				cs.dist = distUser
			case DistinguisherByNamespace:
				cs.dist = distNamespace
			}
		}
		c.cs[i] = cs
		for r := range fs.Spec.Rules {
			rule := &fs.Spec.Rules[r]
			exact := true
			for _, s := range rule.Subjects {
				if s.Kind == SubjectKindServiceAccount && s.ServiceAccount != nil && strings.Contains(s.ServiceAccount.Namespace, ":") {
					exact = false
				}
			}
			c.rules = append(c.rules, compiledRule{schema: i, index: r, rule: rule, subjectExact: exact})
		}
	}
}

func checkUniqueNames(cfg *Config) error {
	var errs []error
	seen := map[string]bool{}
	for i, fs := range cfg.FlowSchemas {
		if seen[fs.Name] {
			errs = append(errs, fmt.Errorf("flowschema: FlowSchemas[%d]: duplicate FlowSchema name %q", i, fs.Name))
		}
		seen[fs.Name] = true
	}
	seen = map[string]bool{}
	for i, pl := range cfg.PriorityLevels {
		if seen[pl.Name] {
			errs = append(errs, fmt.Errorf("flowschema: PriorityLevels[%d]: duplicate PriorityLevelConfiguration name %q", i, pl.Name))
		}
		seen[pl.Name] = true
	}
	return errors.Join(errs...)
}

// brokenLevel returns why upstream's controller would ignore pl, or "".
func brokenLevel(pl *PriorityLevelConfiguration) string {
	s := &pl.Spec
	switch {
	case s.Type != PriorityLevelTypeLimited && s.Type != PriorityLevelTypeExempt:
		// Upstream crashes on this; we ignore the level instead.
		return fmt.Sprintf("unknown type %q", s.Type)
	case (s.Type == PriorityLevelTypeLimited) != (s.Limited != nil):
		return "broken union structure at the top, for Limited"
	case (s.Type == PriorityLevelTypeExempt) != (s.Exempt != nil):
		return "broken union structure at the top, for Exempt"
	case (s.Type == PriorityLevelTypeExempt) != (pl.Name == PriorityLevelNameExempt):
		return "non-alignment between name and type"
	}
	if l := s.Limited; l != nil {
		if (l.LimitResponse.Type == LimitResponseReject) != (l.LimitResponse.Queuing == nil) {
			return "broken union structure for limit response"
		}
		if q := l.LimitResponse.Queuing; q != nil && q.Queues > 0 {
			if _, err := shufflesharding.NewDealer(int(q.Queues), int(q.HandSize)); err != nil {
				return "invalid shuffle sharding config: " + err.Error()
			}
		}
	}
	return ""
}

// FlowSchemas returns a copy of the FlowSchemas in matching order,
// including the mandatory ones Compile added: the caller may reorder or
// change the slice and its elements' top-level fields; the rules and
// subjects inside are shared and must not be modified.
func (c *Classifier) FlowSchemas() []FlowSchema { return slices.Clone(c.schemas) }

// Imagined reports whether FlowSchemas()[i] was added by Compile because the
// configuration lacked it.
func (c *Classifier) Imagined(i int) bool { return c.imagined[i] }

// PriorityLevels returns the priority levels in use: the valid levels of
// the configuration in its order, then any mandatory level Compile added.
// The caller must not modify them.
func (c *Classifier) PriorityLevels() []PriorityLevelConfiguration { return c.levels }

// LevelImagined reports whether PriorityLevels()[i] was added by Compile.
func (c *Classifier) LevelImagined(i int) bool { return c.levelImg[i] }

// IgnoredLevels returns the priority levels Compile left out, and why.
func (c *Classifier) IgnoredLevels() []IgnoredLevel { return c.ignored }

// DanglingSchemas returns the FlowSchemas Compile skipped because their
// priority level does not exist, in configuration order.
func (c *Classifier) DanglingSchemas() []DanglingSchema { return c.dangling }

// Classify returns the decision for req: the first FlowSchema in matching
// order with a rule that matches, or, when none does, upstream's fallback
// to catch-all. It does not allocate unless the flow distinguisher and
// FlowSchema name together exceed 255 bytes. req is not retained. Flow
// hashes are cached (512 entries, lock-free), so a recurring flow costs no
// SHA-256.
func (c *Classifier) Classify(req *Request) Decision {
	schema, rule := c.catchAll, -1
	if r := c.idx.first(c.rules, req); r >= 0 {
		cr := &c.rules[r]
		schema, rule = cr.schema, cr.index
	}
	cs := &c.cs[schema]
	var dist string
	var hash uint64
	if cs.hasFlow {
		switch cs.dist {
		case distUser:
			dist = req.User
		case distNamespace:
			dist = req.Namespace
		}
		hash = c.hashes.flowHash(schema, cs.name, dist)
	}
	// One composite literal, built in the result.
	return Decision{
		FlowSchema:    cs.name,
		PriorityLevel: cs.lname,
		SchemaIndex:   schema,
		LevelIndex:    cs.level,
		Rule:          rule,
		Fallback:      rule < 0,
		Exempt:        cs.exempt,
		HasFlow:       cs.hasFlow,
		Distinguisher: dist,
		FlowHash:      hash,
	}
}
