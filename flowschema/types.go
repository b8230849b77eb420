package flowschema

// These types mirror flowcontrol.apiserver.k8s.io/v1 (k8s.io/api
// flowcontrol/v1) field for field, with the same JSON names, so a manifest
// decodes into them without conversion. Fields the algorithms do not use
// (most of metadata, timestamps) are either omitted or kept as opaque values;
// unknown fields are ignored when decoding, as kubectl does.

// API group, version and the kinds this package reads.
const (
	GroupName   = "flowcontrol.apiserver.k8s.io"
	APIVersion  = GroupName + "/v1"
	KindFS      = "FlowSchema"
	KindPL      = "PriorityLevelConfiguration"
	KindList    = "List"
	KindFSList  = "FlowSchemaList"
	KindPLList  = "PriorityLevelConfigurationList"
	annotations = "apf.kubernetes.io/autoupdate-spec"
)

// Well-known names and wildcards of the API.
const (
	// FlowSchemaNameExempt and FlowSchemaNameCatchAll name the mandatory
	// FlowSchemas.
	FlowSchemaNameExempt   = "exempt"
	FlowSchemaNameCatchAll = "catch-all"
	// PriorityLevelNameExempt and PriorityLevelNameCatchAll name the
	// mandatory priority levels.
	PriorityLevelNameExempt   = "exempt"
	PriorityLevelNameCatchAll = "catch-all"

	// NameAll is the wildcard for a user, group or service-account name.
	NameAll = "*"
	// VerbAll, APIGroupAll, ResourceAll, NamespaceEvery and NonResourceAll
	// match everything when they are the only member of their list.
	VerbAll        = "*"
	APIGroupAll    = "*"
	ResourceAll    = "*"
	NamespaceEvery = "*"
	NonResourceAll = "*"

	// AutoUpdateAnnotationKey marks bootstrap objects the API server keeps
	// up to date.
	AutoUpdateAnnotationKey = annotations
)

// Subject kinds.
const (
	SubjectKindUser           = "User"
	SubjectKindGroup          = "Group"
	SubjectKindServiceAccount = "ServiceAccount"
)

// Flow distinguisher methods.
const (
	DistinguisherByUser      = "ByUser"
	DistinguisherByNamespace = "ByNamespace"
)

// Priority level types and limit response types.
const (
	PriorityLevelTypeExempt  = "Exempt"
	PriorityLevelTypeLimited = "Limited"
	LimitResponseQueue       = "Queue"
	LimitResponseReject      = "Reject"
)

// ServiceAccountUsernamePrefix starts the user name of every service
// account: system:serviceaccount:<namespace>:<name>.
const ServiceAccountUsernamePrefix = "system:serviceaccount:"

// TypeMeta is the apiVersion and kind of an object.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// ObjectMeta holds the metadata this package uses. Other metadata fields
// are ignored when decoding.
type ObjectMeta struct {
	Name         string            `json:"name,omitempty"`
	GenerateName string            `json:"generateName,omitempty"`
	Namespace    string            `json:"namespace,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	Generation   int64             `json:"generation,omitempty"`
}

// FlowSchema classifies requests into a priority level and a flow.
type FlowSchema struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       FlowSchemaSpec   `json:"spec,omitempty"`
	Status     FlowSchemaStatus `json:"status,omitempty"`
}

// FlowSchemaSpec is the matching part of a FlowSchema.
type FlowSchemaSpec struct {
	PriorityLevelConfiguration PriorityLevelConfigurationReference `json:"priorityLevelConfiguration"`
	// MatchingPrecedence orders FlowSchemas, lowest first; 0 is defaulted
	// to 1000.
	MatchingPrecedence  int32                     `json:"matchingPrecedence,omitempty"`
	DistinguisherMethod *FlowDistinguisherMethod  `json:"distinguisherMethod,omitempty"`
	Rules               []PolicyRulesWithSubjects `json:"rules,omitempty"`
}

// PriorityLevelConfigurationReference names the priority level of a
// FlowSchema.
type PriorityLevelConfigurationReference struct {
	Name string `json:"name"`
}

// FlowDistinguisherMethod says how requests of a FlowSchema are split into
// flows: Type is ByUser or ByNamespace.
type FlowDistinguisherMethod struct {
	Type string `json:"type"`
}

// PolicyRulesWithSubjects matches a request when one of its subjects
// matches the requester and one of its rules matches the request (resource
// rules for resource requests, non-resource rules otherwise).
type PolicyRulesWithSubjects struct {
	Subjects         []Subject               `json:"subjects"`
	ResourceRules    []ResourcePolicyRule    `json:"resourceRules,omitempty"`
	NonResourceRules []NonResourcePolicyRule `json:"nonResourceRules,omitempty"`
}

// Subject is a user, a group or a service account; exactly one of the
// pointers matching Kind is set.
type Subject struct {
	Kind           string                 `json:"kind"`
	User           *UserSubject           `json:"user,omitempty"`
	Group          *GroupSubject          `json:"group,omitempty"`
	ServiceAccount *ServiceAccountSubject `json:"serviceAccount,omitempty"`
}

// UserSubject matches a user by name ("*" for any user).
type UserSubject struct {
	Name string `json:"name"`
}

// GroupSubject matches members of a group ("*" for any group).
type GroupSubject struct {
	Name string `json:"name"`
}

// ServiceAccountSubject matches a service account of a namespace ("*" for
// every service account of the namespace).
type ServiceAccountSubject struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// ResourcePolicyRule matches resource requests.
type ResourcePolicyRule struct {
	Verbs        []string `json:"verbs"`
	APIGroups    []string `json:"apiGroups"`
	Resources    []string `json:"resources"`
	ClusterScope bool     `json:"clusterScope,omitempty"`
	Namespaces   []string `json:"namespaces"`
}

// NonResourcePolicyRule matches non-resource requests by verb and path.
type NonResourcePolicyRule struct {
	Verbs           []string `json:"verbs"`
	NonResourceURLs []string `json:"nonResourceURLs"`
}

// FlowSchemaStatus is the status the API server writes.
type FlowSchemaStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
}

// Condition is a status condition of a FlowSchema or priority level.
type Condition struct {
	Type               string `json:"type,omitempty"`
	Status             string `json:"status,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
}

// PriorityLevelConfiguration is a priority level: its share of the
// server's concurrency and how excess requests wait or are rejected.
type PriorityLevelConfiguration struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PriorityLevelConfigurationSpec   `json:"spec,omitempty"`
	Status     PriorityLevelConfigurationStatus `json:"status,omitempty"`
}

// PriorityLevelConfigurationSpec is a union on Type: Limited or Exempt.
type PriorityLevelConfigurationSpec struct {
	Type    string                             `json:"type"`
	Limited *LimitedPriorityLevelConfiguration `json:"limited,omitempty"`
	Exempt  *ExemptPriorityLevelConfiguration  `json:"exempt,omitempty"`
}

// LimitedPriorityLevelConfiguration configures a limited priority level.
type LimitedPriorityLevelConfiguration struct {
	NominalConcurrencyShares *int32        `json:"nominalConcurrencyShares,omitempty"`
	LimitResponse            LimitResponse `json:"limitResponse,omitempty"`
	LendablePercent          *int32        `json:"lendablePercent,omitempty"`
	BorrowingLimitPercent    *int32        `json:"borrowingLimitPercent,omitempty"`
}

// ExemptPriorityLevelConfiguration configures the exempt priority level.
type ExemptPriorityLevelConfiguration struct {
	NominalConcurrencyShares *int32 `json:"nominalConcurrencyShares,omitempty"`
	LendablePercent          *int32 `json:"lendablePercent,omitempty"`
}

// LimitResponse says what happens to a request beyond the limit: Queue
// (with Queuing) or Reject.
type LimitResponse struct {
	Type    string                `json:"type"`
	Queuing *QueuingConfiguration `json:"queuing,omitempty"`
}

// QueuingConfiguration configures the queues of a priority level.
type QueuingConfiguration struct {
	Queues           int32 `json:"queues,omitempty"`
	HandSize         int32 `json:"handSize,omitempty"`
	QueueLengthLimit int32 `json:"queueLengthLimit,omitempty"`
}

// PriorityLevelConfigurationStatus is the status the API server writes.
type PriorityLevelConfigurationStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
}

// Config is a set of FlowSchemas and priority levels, in the order read.
type Config struct {
	FlowSchemas    []FlowSchema
	PriorityLevels []PriorityLevelConfiguration
}

// Int32 returns a pointer to v, for the optional fields.
func Int32(v int32) *int32 { return &v }
