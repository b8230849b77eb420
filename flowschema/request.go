package flowschema

// Request is what the classifier needs to know about a request: who sent
// it (the authenticated user and groups) and what it asks for (the fields
// of the API server's RequestInfo). The JSON form is the one "fairslice
// classify" reads.
type Request struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
	// Verb is the RequestInfo verb (get, list, watch, create, update,
	// patch, delete, deletecollection, proxy) for resource requests and the
	// lowercase HTTP method otherwise.
	Verb        string `json:"verb"`
	APIGroup    string `json:"apiGroup"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource"`
	// Namespace is empty for cluster-scoped and non-resource requests.
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	Path            string `json:"path"`
	ResourceRequest bool   `json:"resourceRequest"`
}

// Decision is the classification of a request.
type Decision struct {
	// FlowSchema and PriorityLevel name the matching FlowSchema and its
	// priority level.
	FlowSchema    string
	PriorityLevel string
	// SchemaIndex and LevelIndex locate them in Classifier.FlowSchemas and
	// Classifier.PriorityLevels.
	SchemaIndex int
	LevelIndex  int
	// Rule is the index in the FlowSchema's rules of the first rule that
	// matched, or -1 when nothing matched and upstream's catch-all
	// fallback was taken (Fallback is then true).
	Rule     int
	Fallback bool
	// Exempt is true when the priority level is of type Exempt.
	Exempt bool
	// HasFlow is true when upstream computes a flow for the request: the
	// level is not exempt, queues, and has more than one queue. Otherwise
	// Distinguisher is "" and FlowHash is 0, as upstream.
	HasFlow bool
	// Distinguisher is the flow distinguisher: the user name (ByUser), the
	// namespace (ByNamespace) or "" (no method).
	Distinguisher string
	// FlowHash is shufflesharding.FlowHash(FlowSchema, Distinguisher).
	FlowHash uint64
}
