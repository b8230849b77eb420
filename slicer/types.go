package slicer

import "time"

// AddressType is the kind of address an EndpointSlice holds, as in
// discovery/v1.
type AddressType string

// The address types of discovery/v1. Service IP families map to IPv4 and
// IPv6; FQDN appears only in mirrored or hand-made slices.
const (
	IPv4 AddressType = "IPv4"
	IPv6 AddressType = "IPv6"
	FQDN AddressType = "FQDN"
)

// Well-known label and annotation keys, with upstream's values.
const (
	// LabelServiceName names the Service a slice belongs to.
	LabelServiceName = "kubernetes.io/service-name"
	// LabelManagedBy names the controller that manages a slice.
	LabelManagedBy = "endpointslice.kubernetes.io/managed-by"
	// LabelHeadless marks slices of a Service without a cluster IP.
	LabelHeadless = "service.kubernetes.io/headless"
	// AnnotationTriggerTime is the last-change-trigger-time annotation.
	AnnotationTriggerTime = "endpoints.kubernetes.io/last-change-trigger-time"
	// DefaultControllerName is the managed-by value of the EndpointSlice
	// controller.
	DefaultControllerName = "endpointslice-controller.k8s.io"
	// DefaultMaxEndpointsPerSlice is kube-controller-manager's default.
	DefaultMaxEndpointsPerSlice = 100
	// MaxMaxEndpointsPerSlice is the largest allowed MaxEndpointsPerSlice
	// (and the validation limit on endpoints per slice).
	MaxMaxEndpointsPerSlice = 1000
)

// Tristate is an optional boolean: the API's *bool as a plain value.
// The zero value is Unset (a nil pointer).
type Tristate uint8

// Tristate values.
const (
	Unset Tristate = iota
	False
	True
)

// TristateOf returns True for true and False for false.
func TristateOf(b bool) Tristate {
	if b {
		return True
	}
	return False
}

// IsTrue reports whether t is True (Unset is not true).
func (t Tristate) IsTrue() bool { return t == True }

// String returns "unset", "false" or "true".
func (t Tristate) String() string {
	switch t {
	case False:
		return "false"
	case True:
		return "true"
	}
	return "unset"
}

// Conditions are an endpoint's conditions. Unset fields correspond to nil
// pointers in the API; the EndpointSlice controller always sets all three.
type Conditions struct {
	Ready       Tristate
	Serving     Tristate
	Terminating Tristate
}

// PodConditions returns the conditions the EndpointSlice controller gives a
// pod's endpoint: serving is the pod's Ready condition, terminating is a
// set deletion timestamp, and ready is publishNotReadyAddresses or (serving
// and not terminating).
func PodConditions(podReady, terminating, publishNotReadyAddresses bool) Conditions {
	return Conditions{
		Ready:       TristateOf(publishNotReadyAddresses || (podReady && !terminating)),
		Serving:     TristateOf(podReady),
		Terminating: TristateOf(terminating),
	}
}

// ObjectRef is an endpoint's target reference (corev1.ObjectReference).
// The zero value means no reference. ResourceVersion is carried but plays
// no part in comparisons, as upstream.
type ObjectRef struct {
	Kind            string
	Namespace       string
	Name            string
	UID             string
	APIVersion      string
	ResourceVersion string
	FieldPath       string
}

// IsZero reports whether r is the zero reference (a nil targetRef).
func (r ObjectRef) IsZero() bool { return r == ObjectRef{} }

// equalIgnoringVersion compares two references without ResourceVersion,
// field by field: it runs for every existing endpoint of a sync, and
// copies of both references cost more than the comparison.
func (r *ObjectRef) equalIgnoringVersion(o *ObjectRef) bool {
	return r.Name == o.Name && r.Namespace == o.Namespace && r.UID == o.UID && r.Kind == o.Kind &&
		r.APIVersion == o.APIVersion && r.FieldPath == o.FieldPath
}

// Hints are an endpoint's topology hints. A nil *Hints is no hints; a
// non-nil one with empty lists still counts as carrying hints, as upstream.
type Hints struct {
	ForZones []string
	ForNodes []string
}

// Endpoint is one network endpoint of a slice.
//
// Its identity is (sorted Addresses, Hostname, TargetRef.Namespace,
// TargetRef.Name); two endpoints with the same identity are the same
// endpoint. An existing endpoint whose identity is desired is rewritten
// when NodeName, Zone, any condition or TargetRef (ignoring
// ResourceVersion) differs. Hints are never part of that comparison.
type Endpoint struct {
	Addresses  []string
	Hostname   string // "" is no hostname
	NodeName   string // "" is no node name
	Zone       string // "" is no zone
	Conditions Conditions
	TargetRef  ObjectRef
	Hints      *Hints
}

// Port is an EndpointSlice port. AppProtocol "" is no app protocol; Port
// 0 is no port number (all ports).
type Port struct {
	Name        string
	Port        int32
	Protocol    string
	AppProtocol string
}

// OwnerRef is an owner reference of a slice.
type OwnerRef struct {
	APIVersion         string
	Kind               string
	Name               string
	UID                string
	Controller         bool
	BlockOwnerDeletion bool
}

// Slice is an EndpointSlice as the reconciler sees it.
//
// Slices in a Plan share Endpoints, Ports, Owners, Labels and Annotations
// with the inputs where they are unchanged; treat all of them as read-only
// and copy before modifying (Slice.Clone).
type Slice struct {
	// Name is the slice's name; empty for a slice to create, which has
	// GenerateName instead.
	Name         string
	GenerateName string
	Namespace    string
	AddressType  AddressType
	Ports        []Port
	Endpoints    []Endpoint
	Labels       map[string]string
	Annotations  map[string]string
	Owners       []OwnerRef
}

// Clone returns a deep copy of s.
func (s Slice) Clone() Slice {
	c := s
	c.Ports = append([]Port(nil), s.Ports...)
	c.Endpoints = make([]Endpoint, len(s.Endpoints))
	for i, e := range s.Endpoints {
		c.Endpoints[i] = e.clone()
	}
	c.Labels = cloneMap(s.Labels)
	c.Annotations = cloneMap(s.Annotations)
	c.Owners = append([]OwnerRef(nil), s.Owners...)
	return c
}

func (e Endpoint) clone() Endpoint {
	c := e
	c.Addresses = append([]string(nil), e.Addresses...)
	if e.Hints != nil {
		h := Hints{
			ForZones: append([]string(nil), e.Hints.ForZones...),
			ForNodes: append([]string(nil), e.Hints.ForNodes...),
		}
		c.Hints = &h
	}
	return c
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Service holds the facts about a Service that reconciliation needs.
type Service struct {
	Namespace string
	Name      string
	UID       string
	// Labels are the Service's labels; reserved keys are ignored.
	Labels map[string]string
	// AddressTypes are the address types the Service supports (see
	// AddressTypesFor). Existing slices of other types are deleted.
	AddressTypes []AddressType
	// Headless is true when the Service has no cluster IP (clusterIP ""
	// or "None"); its slices then carry the headless label.
	Headless bool
	// PublishNotReadyAddresses is spec.publishNotReadyAddresses. Reconcile
	// itself does not use it (conditions are part of the desired
	// endpoints, see PodConditions); it is here for adapters.
	PublishNotReadyAddresses bool
	// Deleting is true when the Service has a deletion timestamp: no slice
	// is created then (recycled updates still happen), as upstream.
	Deleting bool
	// TriggerTime is the last-change trigger time written on every slice
	// created or updated; zero removes the annotation from them.
	TriggerTime time.Time
	// Owner is the owner reference of the slices created for the
	// Service, and the owner an existing slice must have to be kept (by
	// APIVersion, Kind and UID); the zero value is the Service itself (v1
	// Service, Name, UID, controller and blocking deletion), as upstream.
	// A writer whose slices belong to another object of the Service's
	// namespace (a ServiceImport, say) sets it.
	Owner OwnerRef
	// TopologyHints is true when hints are managed by a later pass (the
	// topology-mode annotation or a valid trafficDistribution). When
	// false, Reconcile removes hints as upstream does: it clears them on
	// slices being written and rewrites unchanged slices that carry any.
	TopologyHints bool
}

// AddressTypesFor returns the address types of a Service with the given
// spec.ipFamilies and spec.clusterIP, as upstream: the families if any are
// set, else the family of the cluster IP, else (headless without families)
// both IPv4 and IPv6. The result is in the order IPv4, IPv6.
func AddressTypesFor(ipFamilies []string, clusterIP string) []AddressType {
	var v4, v6 bool
	for _, f := range ipFamilies {
		switch f {
		case "IPv4":
			v4 = true
		case "IPv6":
			v6 = true
		}
	}
	if !v4 && !v6 {
		if clusterIP != "" && clusterIP != "None" {
			if isIPv6String(clusterIP) {
				v6 = true
			} else {
				v4 = true
			}
		} else {
			v4, v6 = true, true
		}
	}
	var out []AddressType
	if v4 {
		out = append(out, IPv4)
	}
	if v6 {
		out = append(out, IPv6)
	}
	return out
}

// Group is a set of desired endpoints of one address type sharing one port
// set. A group with no endpoints still counts as desired: its existing
// slices are emptied (and deleted) rather than deleted as an obsolete port
// set, as upstream does for a port set some pod maps to.
//
// The order of the groups matters: each address type's port sets are
// reconciled in the order they first appear, which decides the order of
// the creates and so which of them recycling turns into updates (the only
// ones kept for a Service being deleted). Give them in pod order, as
// upstream fills its map of port sets: a pod's port set is placed when the
// first pod with it is seen, even one left out for a missing node or one
// without an address of the type.
type Group struct {
	AddressType AddressType
	Ports       []Port
	Endpoints   []Endpoint
}

// Options configure reconciliation.
type Options struct {
	// MaxEndpointsPerSlice is the most endpoints in a slice, 1..1000;
	// 0 means DefaultMaxEndpointsPerSlice.
	MaxEndpointsPerSlice int
	// ControllerName is the managed-by label value; "" means
	// DefaultControllerName.
	ControllerName string
	// Compact enables the repacking policy (see the package
	// documentation): when the slices being rewritten could hold their
	// endpoints in fewer slices, the sparsest are deleted instead of
	// rewritten and their endpoints move into the others, so churn leaves
	// fewer, fuller slices without extra writes. Off by default, which
	// gives upstream's plans.
	Compact bool
}

// Plan is the outcome of a reconciliation: the API calls to make, in the
// order creates, updates, deletes, plus the slices left as they are.
//
// Counts are those of the calls upstream's Reconcile issues, after
// recycling: a slice to create that can take the name of a slice to
// delete (same address type, owned by the Service) becomes an update of
// it. Within each list, slices are ordered by address type (IPv4, IPv6,
// FQDN), deletes of unsupported address types come last.
//
// A topology pass works on it per address type, as upstream's
// topologycache.AddHints does on ToCreate, ToUpdate and Unchanged: select
// the slices of Creates, Updates and Unchanged with that AddressType, set
// endpoint hints on creates and updates (their endpoints are the plan's
// own), and Rewrite unchanged slices whose hints must change. Set
// Service.TopologyHints so that Reconcile keeps existing hints for it.
type Plan struct {
	Creates   []Slice
	Updates   []Slice
	Deletes   []Slice
	Unchanged []Slice
	// Added and Removed are upstream's endpoints_added_per_sync and
	// endpoints_removed_per_sync for this reconciliation.
	Added, Removed int
	// Types has an entry for each address type of the Service, in the
	// order reconciled (IPv4, IPv6, FQDN), with its share of Added and
	// Removed: upstream reconciles each address type on its own and
	// records its per-sync metrics once for each.
	Types []TypeChurn
	// Dropped are the slices Creates would hold if the Service were not
	// being deleted (Service.Deleting): upstream does not create them but
	// counts them in its metrics, among the slices changed and the slices
	// that exist.
	Dropped []Slice
	// Invalid lists what Validate finds wrong with the slices to create
	// and update (a loopback pod IP, two Service ports of one name): the
	// API server would refuse those writes. The plan still holds them, as
	// upstream would send them; a controller reports the problems (an
	// event, a log line) and may leave those slices out.
	Invalid []InvalidSlice
}

// TypeChurn is one address type's share of a plan's Added and Removed.
type TypeChurn struct {
	AddressType    AddressType
	Added, Removed int
}

// Writes returns the number of API calls in the plan.
func (p *Plan) Writes() int { return len(p.Creates) + len(p.Updates) + len(p.Deletes) }

// MoveToUpdates moves p.Unchanged[i] to the end of p.Updates, with its own copy
// of the endpoints (so that they may be modified) and the trigger-time
// annotation set to triggerTime (removed if zero), as every written slice
// gets, and returns its index in p.Updates. It is for passes that run
// after Reconcile, such as adding topology hints, which upstream runs
// before recycling: recycling pairs only creates and deletes, so running
// such a pass on the recycled plan gives the same calls. It panics if i is
// out of range.
func (p *Plan) MoveToUpdates(i int, triggerTime time.Time) int {
	s := p.Unchanged[i]
	p.Unchanged = append(p.Unchanged[:i:i], p.Unchanged[i+1:]...)
	s.Endpoints = append([]Endpoint(nil), s.Endpoints...)
	s.Annotations = withTriggerTime(s.Annotations, triggerTime)
	p.Updates = append(p.Updates, s)
	return len(p.Updates) - 1
}
