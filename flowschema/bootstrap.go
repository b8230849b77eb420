package flowschema

import "slices"

// The bootstrap configuration of k8s.io/apiserver v0.37.2
// (pkg/apis/flowcontrol/bootstrap/default.go): the mandatory objects the API
// server always keeps, and the suggested ones it creates. Every function
// returns fresh objects the caller may modify.

// Well-known user and group names the bootstrap objects use.
const (
	GroupSystemMasters          = "system:masters"
	GroupAuthenticated          = "system:authenticated"
	GroupUnauthenticated        = "system:unauthenticated"
	GroupNodes                  = "system:nodes"
	GroupServiceAccounts        = "system:serviceaccounts"
	UserKubeControllerManager   = "system:kube-controller-manager"
	UserKubeScheduler           = "system:kube-scheduler"
	namespaceKubeSystem         = "kube-system"
	apiGroupCoordination        = "coordination.k8s.io"
	apiGroupCore                = ""
	suggestedQueueLengthLimit   = 50
	mandatoryPrecedenceExempt   = 1
	mandatoryPrecedenceCatchAll = 10000
)

// MandatoryPriorityLevels returns the mandatory priority levels, catch-all
// then exempt, as upstream lists them.
func MandatoryPriorityLevels() []PriorityLevelConfiguration {
	return []PriorityLevelConfiguration{mandatoryPLCatchAll(), mandatoryPLExempt()}
}

// MandatoryFlowSchemas returns the mandatory FlowSchemas, exempt then
// catch-all.
func MandatoryFlowSchemas() []FlowSchema {
	return []FlowSchema{mandatoryFSExempt(), mandatoryFSCatchAll()}
}

// SuggestedPriorityLevels returns the suggested priority levels in
// upstream's order.
func SuggestedPriorityLevels() []PriorityLevelConfiguration {
	return []PriorityLevelConfiguration{
		queuingPL("system", 30, 33, 64, 6),
		queuingPL("node-high", 40, 25, 64, 6),
		queuingPL("leader-election", 10, 0, 16, 4),
		queuingPL("workload-high", 40, 50, 128, 6),
		queuingPL("workload-low", 100, 90, 128, 6),
		queuingPL("global-default", 20, 50, 128, 6),
	}
}

// SuggestedFlowSchemas returns the suggested FlowSchemas in upstream's
// order (which is not the matching order).
func SuggestedFlowSchemas() []FlowSchema {
	everything := func(subjects ...Subject) PolicyRulesWithSubjects {
		return PolicyRulesWithSubjects{
			Subjects:         subjects,
			ResourceRules:    []ResourcePolicyRule{allResources()},
			NonResourceRules: []NonResourcePolicyRule{allNonResources()},
		}
	}
	kubeSystemSAs := serviceAccount(namespaceKubeSystem, NameAll)
	return []FlowSchema{
		newFS("system-nodes", "system", 500, DistinguisherByUser, everything(group(GroupNodes))),
		newFS("system-node-high", "node-high", 400, DistinguisherByUser, PolicyRulesWithSubjects{
			Subjects: []Subject{group(GroupNodes)},
			ResourceRules: []ResourcePolicyRule{
				{Verbs: []string{VerbAll}, APIGroups: []string{apiGroupCore}, Resources: []string{"nodes", "nodes/status"},
					Namespaces: []string{NamespaceEvery}, ClusterScope: true},
				{Verbs: []string{VerbAll}, APIGroups: []string{apiGroupCoordination}, Resources: []string{"leases"},
					Namespaces: []string{NamespaceEvery}},
			},
		}),
		newFS("probes", PriorityLevelNameExempt, 2, "", PolicyRulesWithSubjects{
			Subjects: []Subject{group(GroupUnauthenticated), group(GroupAuthenticated)},
			NonResourceRules: []NonResourcePolicyRule{
				{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz", "/livez"}},
			},
		}),
		newFS("system-leader-election", "leader-election", 100, DistinguisherByUser, PolicyRulesWithSubjects{
			Subjects: []Subject{user(UserKubeControllerManager), user(UserKubeScheduler), kubeSystemSAs},
			ResourceRules: []ResourcePolicyRule{
				{Verbs: []string{"get", "create", "update"}, APIGroups: []string{apiGroupCoordination},
					Resources: []string{"leases"}, Namespaces: []string{NamespaceEvery}},
			},
		}),
		newFS("kube-controller-manager", "workload-high", 800, DistinguisherByNamespace, everything(user(UserKubeControllerManager))),
		newFS("kube-scheduler", "workload-high", 800, DistinguisherByNamespace, everything(user(UserKubeScheduler))),
		newFS("kube-system-service-accounts", "workload-high", 900, DistinguisherByNamespace, everything(kubeSystemSAs)),
		newFS("service-accounts", "workload-low", 9000, DistinguisherByUser, everything(group(GroupServiceAccounts))),
		newFS("global-default", "global-default", 9900, DistinguisherByUser,
			everything(group(GroupUnauthenticated), group(GroupAuthenticated))),
	}
}

// DefaultConfig returns the configuration a new API server creates: the
// mandatory and suggested objects (mandatory first).
func DefaultConfig() *Config {
	return &Config{
		FlowSchemas:    append(MandatoryFlowSchemas(), SuggestedFlowSchemas()...),
		PriorityLevels: append(MandatoryPriorityLevels(), SuggestedPriorityLevels()...),
	}
}

func mandatoryPLExempt() PriorityLevelConfiguration {
	return newPL(PriorityLevelNameExempt, PriorityLevelConfigurationSpec{
		Type:   PriorityLevelTypeExempt,
		Exempt: &ExemptPriorityLevelConfiguration{NominalConcurrencyShares: Int32(0), LendablePercent: Int32(0)},
	})
}

func mandatoryPLCatchAll() PriorityLevelConfiguration {
	return newPL(PriorityLevelNameCatchAll, PriorityLevelConfigurationSpec{
		Type: PriorityLevelTypeLimited,
		Limited: &LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: Int32(5),
			LendablePercent:          Int32(0),
			LimitResponse:            LimitResponse{Type: LimitResponseReject},
		},
	})
}

func mandatoryFSExempt() FlowSchema {
	return newFS(FlowSchemaNameExempt, PriorityLevelNameExempt, mandatoryPrecedenceExempt, "", PolicyRulesWithSubjects{
		Subjects:         []Subject{group(GroupSystemMasters)},
		ResourceRules:    []ResourcePolicyRule{allResources()},
		NonResourceRules: []NonResourcePolicyRule{allNonResources()},
	})
}

func mandatoryFSCatchAll() FlowSchema {
	return newFS(FlowSchemaNameCatchAll, PriorityLevelNameCatchAll, mandatoryPrecedenceCatchAll, DistinguisherByUser, PolicyRulesWithSubjects{
		Subjects:         []Subject{group(GroupUnauthenticated), group(GroupAuthenticated)},
		ResourceRules:    []ResourcePolicyRule{allResources()},
		NonResourceRules: []NonResourcePolicyRule{allNonResources()},
	})
}

func queuingPL(name string, shares, lendable, queues, handSize int32) PriorityLevelConfiguration {
	return newPL(name, PriorityLevelConfigurationSpec{
		Type: PriorityLevelTypeLimited,
		Limited: &LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: Int32(shares),
			LendablePercent:          Int32(lendable),
			LimitResponse: LimitResponse{
				Type:    LimitResponseQueue,
				Queuing: &QueuingConfiguration{Queues: queues, HandSize: handSize, QueueLengthLimit: suggestedQueueLengthLimit},
			},
		},
	})
}

func newPL(name string, spec PriorityLevelConfigurationSpec) PriorityLevelConfiguration {
	return PriorityLevelConfiguration{
		TypeMeta:   TypeMeta{APIVersion: APIVersion, Kind: KindPL},
		ObjectMeta: ObjectMeta{Name: name, Annotations: map[string]string{AutoUpdateAnnotationKey: "true"}},
		Spec:       spec,
	}
}

func newFS(name, plName string, precedence int32, distinguisher string, rules ...PolicyRulesWithSubjects) FlowSchema {
	var dm *FlowDistinguisherMethod
	if distinguisher != "" {
		dm = &FlowDistinguisherMethod{Type: distinguisher}
	}
	return FlowSchema{
		TypeMeta:   TypeMeta{APIVersion: APIVersion, Kind: KindFS},
		ObjectMeta: ObjectMeta{Name: name, Annotations: map[string]string{AutoUpdateAnnotationKey: "true"}},
		Spec: FlowSchemaSpec{
			PriorityLevelConfiguration: PriorityLevelConfigurationReference{Name: plName},
			MatchingPrecedence:         precedence,
			DistinguisherMethod:        dm,
			Rules:                      rules,
		},
	}
}

func allResources() ResourcePolicyRule {
	return ResourcePolicyRule{Verbs: []string{VerbAll}, APIGroups: []string{APIGroupAll}, Resources: []string{ResourceAll},
		Namespaces: []string{NamespaceEvery}, ClusterScope: true}
}

func allNonResources() NonResourcePolicyRule {
	return NonResourcePolicyRule{Verbs: []string{VerbAll}, NonResourceURLs: []string{NonResourceAll}}
}

func group(name string) Subject {
	return Subject{Kind: SubjectKindGroup, Group: &GroupSubject{Name: name}}
}
func user(name string) Subject { return Subject{Kind: SubjectKindUser, User: &UserSubject{Name: name}} }
func serviceAccount(namespace, name string) Subject {
	return Subject{Kind: SubjectKindServiceAccount, ServiceAccount: &ServiceAccountSubject{Namespace: namespace, Name: name}}
}

// WithMandatory returns a copy of cfg with the mandatory objects it lacks
// (by name) added, as the API server creates them in a cluster: a
// configuration file that omits the exempt level still has it, so a
// FlowSchema naming it is not dangling. Objects cfg has are kept as they
// are. Compile alone behaves as upstream's controller given only cfg,
// which checks references before adding the missing mandatory levels.
func WithMandatory(cfg *Config) *Config {
	out := &Config{}
	if cfg != nil {
		out = cfg.DeepCopy()
	}
	for _, pl := range MandatoryPriorityLevels() {
		if !slices.ContainsFunc(out.PriorityLevels, func(p PriorityLevelConfiguration) bool { return p.Name == pl.Name }) {
			out.PriorityLevels = append(out.PriorityLevels, pl)
		}
	}
	for _, fs := range MandatoryFlowSchemas() {
		if !slices.ContainsFunc(out.FlowSchemas, func(f FlowSchema) bool { return f.Name == fs.Name }) {
			out.FlowSchemas = append(out.FlowSchemas, fs)
		}
	}
	return out
}
