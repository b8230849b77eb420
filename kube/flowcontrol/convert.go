package flowcontrol

import (
	"slices"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/fairslice/fairslice/flowschema"
)

// convertConfig turns the informers' flowcontrol/v1 objects into a
// flowschema.Config. Only what classification, limits and queuing read is
// carried over; the objects themselves stay the caller's.
func convertConfig(pls []*flowcontrolv1.PriorityLevelConfiguration, fss []*flowcontrolv1.FlowSchema) *flowschema.Config {
	cfg := &flowschema.Config{
		FlowSchemas:    make([]flowschema.FlowSchema, len(fss)),
		PriorityLevels: make([]flowschema.PriorityLevelConfiguration, len(pls)),
	}
	for i, fs := range fss {
		cfg.FlowSchemas[i] = convertFlowSchema(fs)
	}
	for i, pl := range pls {
		cfg.PriorityLevels[i] = convertPriorityLevel(pl)
	}
	return cfg
}

func convertFlowSchema(in *flowcontrolv1.FlowSchema) flowschema.FlowSchema {
	out := flowschema.FlowSchema{
		TypeMeta:   flowschema.TypeMeta{APIVersion: flowschema.APIVersion, Kind: flowschema.KindFS},
		ObjectMeta: flowschema.ObjectMeta{Name: in.Name, Generation: in.Generation},
		Spec: flowschema.FlowSchemaSpec{
			PriorityLevelConfiguration: flowschema.PriorityLevelConfigurationReference{Name: in.Spec.PriorityLevelConfiguration.Name},
			MatchingPrecedence:         in.Spec.MatchingPrecedence,
		},
	}
	if dm := in.Spec.DistinguisherMethod; dm != nil {
		out.Spec.DistinguisherMethod = &flowschema.FlowDistinguisherMethod{Type: string(dm.Type)}
	}
	out.Spec.Rules = make([]flowschema.PolicyRulesWithSubjects, len(in.Spec.Rules))
	for i := range in.Spec.Rules {
		out.Spec.Rules[i] = convertRule(&in.Spec.Rules[i])
	}
	return out
}

func convertRule(in *flowcontrolv1.PolicyRulesWithSubjects) flowschema.PolicyRulesWithSubjects {
	out := flowschema.PolicyRulesWithSubjects{Subjects: make([]flowschema.Subject, len(in.Subjects))}
	for i, s := range in.Subjects {
		o := flowschema.Subject{Kind: string(s.Kind)}
		if s.User != nil {
			o.User = &flowschema.UserSubject{Name: s.User.Name}
		}
		if s.Group != nil {
			o.Group = &flowschema.GroupSubject{Name: s.Group.Name}
		}
		if s.ServiceAccount != nil {
			o.ServiceAccount = &flowschema.ServiceAccountSubject{Namespace: s.ServiceAccount.Namespace, Name: s.ServiceAccount.Name}
		}
		out.Subjects[i] = o
	}
	for _, r := range in.ResourceRules {
		out.ResourceRules = append(out.ResourceRules, flowschema.ResourcePolicyRule{
			Verbs: slices.Clone(r.Verbs), APIGroups: slices.Clone(r.APIGroups), Resources: slices.Clone(r.Resources),
			ClusterScope: r.ClusterScope, Namespaces: slices.Clone(r.Namespaces),
		})
	}
	for _, r := range in.NonResourceRules {
		out.NonResourceRules = append(out.NonResourceRules, flowschema.NonResourcePolicyRule{
			Verbs: slices.Clone(r.Verbs), NonResourceURLs: slices.Clone(r.NonResourceURLs),
		})
	}
	return out
}

func convertPriorityLevel(in *flowcontrolv1.PriorityLevelConfiguration) flowschema.PriorityLevelConfiguration {
	out := flowschema.PriorityLevelConfiguration{
		TypeMeta:   flowschema.TypeMeta{APIVersion: flowschema.APIVersion, Kind: flowschema.KindPL},
		ObjectMeta: flowschema.ObjectMeta{Name: in.Name, Generation: in.Generation},
		Spec:       flowschema.PriorityLevelConfigurationSpec{Type: string(in.Spec.Type)},
	}
	if l := in.Spec.Limited; l != nil {
		ol := &flowschema.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: clone32(l.NominalConcurrencyShares),
			LendablePercent:          clone32(l.LendablePercent),
			BorrowingLimitPercent:    clone32(l.BorrowingLimitPercent),
			LimitResponse:            flowschema.LimitResponse{Type: string(l.LimitResponse.Type)},
		}
		if q := l.LimitResponse.Queuing; q != nil {
			ol.LimitResponse.Queuing = &flowschema.QueuingConfiguration{Queues: q.Queues, HandSize: q.HandSize, QueueLengthLimit: q.QueueLengthLimit}
		}
		out.Spec.Limited = ol
	}
	if e := in.Spec.Exempt; e != nil {
		out.Spec.Exempt = &flowschema.ExemptPriorityLevelConfiguration{
			NominalConcurrencyShares: clone32(e.NominalConcurrencyShares),
			LendablePercent:          clone32(e.LendablePercent),
		}
	}
	return out
}

func clone32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
