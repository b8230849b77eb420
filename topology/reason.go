package topology

import "fmt"

// Reason says why Auto hints are off. Each value maps to one message of
// upstream's topologycache/event.go, which is the text of the Warning event
// TopologyAwareHintsDisabled.
type Reason uint8

const (
	// NoReason means hints are on.
	NoReason Reason = iota
	// InsufficientNodeInfo: a ready, non-control-plane node lacks a zone or
	// CPU, the total CPU is zero, or fewer than two zones have nodes.
	InsufficientNodeInfo
	// NodesReadyInOneZoneOnly: only one zone has capacity. Upstream cannot
	// reach it through node information (one zone is InsufficientNodeInfo);
	// it is kept for completeness.
	NodesReadyInOneZoneOnly
	// InsufficientNumberOfEndpoints: fewer ready endpoints than zones.
	InsufficientNumberOfEndpoints
	// MinAllocationExceedsOverloadThreshold: the per-zone minimums that keep
	// every zone within the overload threshold add up to more than the ready
	// endpoints.
	MinAllocationExceedsOverloadThreshold
	// NoZoneSpecified: a ready endpoint in a slice being written has no zone.
	NoZoneSpecified
	// NoAllocatedHintsForZones: no hints could be allocated at all.
	NoAllocatedHintsForZones
	// HintsDisabled: the Service no longer asks for Auto hints (the event
	// upstream emits when the annotation is removed).
	HintsDisabled
	// NotRequested: the Service asks for no hints (no Auto annotation and no
	// usable trafficDistribution). Upstream records no event; its message
	// is "".
	NotRequested
)

// Upstream's event messages (k8s.io/endpointslice/topologycache/event.go).
const (
	MsgNoZoneSpecified                       = "One or more endpoints do not have a zone specified"
	MsgNoAllocatedHintsForZones              = "No hints allocated for zones"
	MsgTopologyAwareHintsEnabled             = "Topology Aware Hints has been enabled"
	MsgTopologyAwareHintsDisabled            = "Topology Aware Hints has been disabled"
	MsgInsufficientNodeInfo                  = "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes"
	MsgNodesReadyInOneZoneOnly               = "Nodes only ready in one zone"
	MsgInsufficientNumberOfEndpoints         = "Insufficient number of endpoints"
	MsgMinAllocationExceedsOverloadThreshold = "Unable to allocate minimum required endpoints to each zone without exceeding overload threshold"
)

var reasonNames = [...]string{
	NoReason:                              "",
	InsufficientNodeInfo:                  "InsufficientNodeInfo",
	NodesReadyInOneZoneOnly:               "NodesReadyInOneZoneOnly",
	InsufficientNumberOfEndpoints:         "InsufficientNumberOfEndpoints",
	MinAllocationExceedsOverloadThreshold: "MinAllocationExceedsOverloadThreshold",
	NoZoneSpecified:                       "NoZoneSpecified",
	NoAllocatedHintsForZones:              "NoAllocatedHintsForZones",
	HintsDisabled:                         "TopologyAwareHintsDisabled",
	NotRequested:                          "NotRequested",
}

var reasonMessages = [...]string{
	NoReason:                              "",
	InsufficientNodeInfo:                  MsgInsufficientNodeInfo,
	NodesReadyInOneZoneOnly:               MsgNodesReadyInOneZoneOnly,
	InsufficientNumberOfEndpoints:         MsgInsufficientNumberOfEndpoints,
	MinAllocationExceedsOverloadThreshold: MsgMinAllocationExceedsOverloadThreshold,
	NoZoneSpecified:                       MsgNoZoneSpecified,
	NoAllocatedHintsForZones:              MsgNoAllocatedHintsForZones,
	HintsDisabled:                         MsgTopologyAwareHintsDisabled,
	NotRequested:                          "",
}

// String returns the reason's name ("" for NoReason).
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Fallback is a typed reason for hints being off, with the counts that
// upstream's message carries.
type Fallback struct {
	Reason Reason
	// Endpoints and Zones are the counts quoted by
	// InsufficientNumberOfEndpoints and MinAllocationExceedsOverloadThreshold.
	Endpoints, Zones int
}

// Message returns upstream's event message for f, without the address
// type suffix, and "" for NoReason.
func (f Fallback) Message() string {
	if int(f.Reason) >= len(reasonMessages) {
		return f.Reason.String()
	}
	msg := reasonMessages[f.Reason]
	switch f.Reason {
	case InsufficientNumberOfEndpoints, MinAllocationExceedsOverloadThreshold:
		msg = fmt.Sprintf("%s (%d endpoints, %d zones)", msg, f.Endpoints, f.Zones)
	}
	return msg
}

// EventMessage returns Message with upstream's ", addressType: X" suffix.
func (f Fallback) EventMessage(addressType string) string {
	return WithAddressType(f.Message(), addressType)
}

// WithAddressType appends upstream's ", addressType: X" to msg.
func WithAddressType(msg, addressType string) string {
	return msg + ", addressType: " + addressType
}

// Event is a Kubernetes event the EndpointSlice controller would record
// about the Service.
type Event struct {
	Type    string // "Normal" or "Warning"
	Reason  string // "TopologyAwareHintsEnabled" or "TopologyAwareHintsDisabled"
	Message string
}
