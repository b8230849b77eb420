package flowschema

import (
	"maps"
	"slices"
)

// DeepCopy returns a copy of fs that shares no memory with it.
func (fs *FlowSchema) DeepCopy() *FlowSchema {
	out := *fs
	out.ObjectMeta = fs.ObjectMeta.deepCopy()
	if d := fs.Spec.DistinguisherMethod; d != nil {
		dd := *d
		out.Spec.DistinguisherMethod = &dd
	}
	out.Spec.Rules = cloneSlice(fs.Spec.Rules, func(r PolicyRulesWithSubjects) PolicyRulesWithSubjects {
		return PolicyRulesWithSubjects{
			Subjects: cloneSlice(r.Subjects, func(s Subject) Subject {
				s.User = clonePtr(s.User)
				s.Group = clonePtr(s.Group)
				s.ServiceAccount = clonePtr(s.ServiceAccount)
				return s
			}),
			ResourceRules: cloneSlice(r.ResourceRules, func(rr ResourcePolicyRule) ResourcePolicyRule {
				rr.Verbs = slices.Clone(rr.Verbs)
				rr.APIGroups = slices.Clone(rr.APIGroups)
				rr.Resources = slices.Clone(rr.Resources)
				rr.Namespaces = slices.Clone(rr.Namespaces)
				return rr
			}),
			NonResourceRules: cloneSlice(r.NonResourceRules, func(nr NonResourcePolicyRule) NonResourcePolicyRule {
				nr.Verbs = slices.Clone(nr.Verbs)
				nr.NonResourceURLs = slices.Clone(nr.NonResourceURLs)
				return nr
			}),
		}
	})
	out.Status.Conditions = slices.Clone(fs.Status.Conditions)
	return &out
}

// DeepCopy returns a copy of pl that shares no memory with it.
func (pl *PriorityLevelConfiguration) DeepCopy() *PriorityLevelConfiguration {
	out := *pl
	out.ObjectMeta = pl.ObjectMeta.deepCopy()
	if l := pl.Spec.Limited; l != nil {
		ll := *l
		ll.NominalConcurrencyShares = clonePtr(l.NominalConcurrencyShares)
		ll.LendablePercent = clonePtr(l.LendablePercent)
		ll.BorrowingLimitPercent = clonePtr(l.BorrowingLimitPercent)
		ll.LimitResponse.Queuing = clonePtr(l.LimitResponse.Queuing)
		out.Spec.Limited = &ll
	}
	if e := pl.Spec.Exempt; e != nil {
		ee := *e
		ee.NominalConcurrencyShares = clonePtr(e.NominalConcurrencyShares)
		ee.LendablePercent = clonePtr(e.LendablePercent)
		out.Spec.Exempt = &ee
	}
	out.Status.Conditions = slices.Clone(pl.Status.Conditions)
	return &out
}

// DeepCopy returns a copy of c that shares no memory with it.
func (c *Config) DeepCopy() *Config {
	out := &Config{
		FlowSchemas:    make([]FlowSchema, len(c.FlowSchemas)),
		PriorityLevels: make([]PriorityLevelConfiguration, len(c.PriorityLevels)),
	}
	for i := range c.FlowSchemas {
		out.FlowSchemas[i] = *c.FlowSchemas[i].DeepCopy()
	}
	for i := range c.PriorityLevels {
		out.PriorityLevels[i] = *c.PriorityLevels[i].DeepCopy()
	}
	return out
}

func (m ObjectMeta) deepCopy() ObjectMeta {
	m.Labels = maps.Clone(m.Labels)
	m.Annotations = maps.Clone(m.Annotations)
	return m
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneSlice[T any](s []T, f func(T) T) []T {
	if s == nil {
		return nil
	}
	out := make([]T, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}
