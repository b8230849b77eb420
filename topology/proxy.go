package topology

import "slices"

// TrafficPolicy is what kube-proxy reads from a Service port to choose its
// endpoint sets.
type TrafficPolicy struct {
	// InternalLocal is internalTrafficPolicy: Local.
	InternalLocal bool
	// ExternalLocal is externalTrafficPolicy: Local.
	ExternalLocal bool
	// External is whether the port accepts external traffic (a NodePort,
	// a load balancer or external IPs).
	External bool
	// IgnoreNodeHints models a kube-proxy with the
	// PreferSameTrafficDistribution feature gate off (possible only when
	// emulating Kubernetes 1.34 or earlier; the gate is locked on since
	// 1.35): node hints are dropped, so PreferSameNode is never chosen and
	// zone hints apply alone.
	IgnoreNodeHints bool
}

// usesCluster and usesLocal are kube-proxy's UsesClusterEndpoints and
// UsesLocalEndpoints.
func (p TrafficPolicy) usesCluster() bool { return !p.InternalLocal || p.External }
func (p TrafficPolicy) usesLocal() bool {
	return p.InternalLocal || (p.ExternalLocal && p.External)
}

// Selection is the endpoints one node's kube-proxy uses for a Service port,
// as indexes into the endpoints given to SelectEndpoints.
type Selection struct {
	// Mode is how hints narrowed the cluster endpoints: "" (not at all),
	// PreferSameZone or PreferSameNode.
	Mode string
	// Cluster are the endpoints for cluster-wide traffic (nil when the port
	// uses only local endpoints, or when there are no endpoints with an
	// address).
	Cluster []int
	// Local are the node's own endpoints for Local traffic policies (nil
	// when the port uses none, or when there are no endpoints with an
	// address). Upstream also returns nil when the port uses local
	// endpoints but the node has none; here that is an empty list.
	Local []int
	// Reachable is every endpoint some traffic to this node can reach:
	// Cluster followed by the Local endpoints not already in it.
	Reachable []int
	// HasAny reports whether the Service has any usable endpoint at all
	// (ready, or serving and terminating), anywhere.
	HasAny bool
	// ClusterTerminating and LocalTerminating report that the set fell back
	// to serving-and-terminating endpoints because none was ready.
	ClusterTerminating, LocalTerminating bool
	// Why explains Mode, and why hints were ignored when they were.
	Why string
}

// proxy-side condition reading (kube-proxy's EndpointSliceCache): an unset
// Ready or Serving is true, an unset Terminating is false.
func proxyReady(e *Endpoint) bool       { return orDefault(e.Conditions.Ready, true) }
func proxyServing(e *Endpoint) bool     { return orDefault(e.Conditions.Serving, true) }
func proxyTerminating(e *Endpoint) bool { return orDefault(e.Conditions.Terminating, false) }

// SelectEndpoints returns the endpoints that kube-proxy (k8s.io/kubernetes
// v1.37.2, pkg/proxy CategorizeEndpoints) on node nodeName in zone ("" if
// the node has no zone label) uses for a Service port with policy p.
// Endpoints without addresses are ignored, as kube-proxy ignores them. An
// endpoint is local when its NodeName is nodeName; with nodeName "" none
// is. eps is taken as kube-proxy's cache hands it over: one endpoint per
// address (the cache keeps the non-terminating one of duplicates).
//
// Node hints are used when every ready endpoint has one and one names this
// node; otherwise zone hints when every ready endpoint has one and one
// names this zone; otherwise all ready endpoints. A set with no ready
// endpoint falls back to the serving-and-terminating ones. O(endpoints).
func SelectEndpoints(eps []Endpoint, p TrafficPolicy, nodeName, zone string) Selection {
	var sel Selection
	// kube-proxy's cache drops endpoints without addresses before
	// CategorizeEndpoints, which returns nothing at all for no endpoints.
	if !slices.ContainsFunc(eps, func(e Endpoint) bool { return len(e.Addresses) > 0 }) {
		sel.Why = "no endpoints"
		return sel
	}
	if p.usesCluster() {
		selectCluster(&sel, eps, nodeName, zone, p.IgnoreNodeHints)
	}
	if !p.usesLocal() {
		sel.Reachable = sel.Cluster
		return sel
	}
	selectLocal(&sel, eps, nodeName)
	if !p.usesCluster() {
		sel.Reachable = sel.Local
		return sel
	}
	if sel.Mode == "" && !sel.LocalTerminating {
		sel.Reachable = sel.Cluster
		return sel
	}
	sel.Reachable = unionByAddress(eps, sel.Cluster, sel.Local)
	return sel
}

// selectCluster sets sel's hint mode and its cluster endpoints: the ready
// endpoints the hints of that mode keep, else the serving-and-terminating
// ones.
func selectCluster(sel *Selection, eps []Endpoint, nodeName, zone string, ignoreNodeHints bool) {
	sel.Mode, sel.Why = modeFromHints(eps, nodeName, zone, ignoreNodeHints)
	for i := range eps {
		e := &eps[i]
		if len(e.Addresses) == 0 || !proxyReady(e) {
			continue
		}
		switch sel.Mode {
		case PreferSameNode:
			if !hasNode(e.Hints, nodeName) {
				continue
			}
		case PreferSameZone:
			if !hasZone(e.Hints, zone) {
				continue
			}
		}
		sel.Cluster = append(sel.Cluster, i)
	}
	if len(sel.Cluster) == 0 {
		for i := range eps {
			if len(eps[i].Addresses) > 0 && proxyServing(&eps[i]) && proxyTerminating(&eps[i]) {
				sel.Cluster = append(sel.Cluster, i)
				sel.ClusterTerminating = true
			}
		}
	}
	sel.HasAny = len(sel.Cluster) > 0
	if sel.Cluster == nil {
		sel.Cluster = []int{}
	}
}

// selectLocal sets sel's local endpoints: the ready ones on this node, else
// its serving-and-terminating ones. As kube-proxy's EndpointSliceCache, an
// endpoint is local when it names this node, and nothing is local to a
// node without a name.
func selectLocal(sel *Selection, eps []Endpoint, nodeName string) {
	local := func(e *Endpoint) bool { return nodeName != "" && e.NodeName == nodeName }
	localReady, localTerm := false, false
	for i := range eps {
		e := &eps[i]
		if len(e.Addresses) == 0 {
			continue
		}
		if proxyReady(e) {
			sel.HasAny = true
			localReady = localReady || local(e)
		} else if proxyServing(e) && proxyTerminating(e) {
			sel.HasAny = true
			localTerm = localTerm || local(e)
		}
	}
	sel.Local = []int{}
	for i := range eps {
		e := &eps[i]
		if len(e.Addresses) == 0 || !local(e) {
			continue
		}
		if (localReady && proxyReady(e)) || (!localReady && localTerm && proxyServing(e) && proxyTerminating(e)) {
			sel.Local = append(sel.Local, i)
		}
	}
	sel.LocalTerminating = !localReady && localTerm
}

// unionByAddress returns the endpoints of cluster, then of local, keeping
// the first of each first address.
func unionByAddress(eps []Endpoint, cluster, local []int) []int {
	var out []int
	seen := make(map[string]bool, len(cluster)+len(local))
	for _, list := range [][]int{cluster, local} {
		for _, i := range list {
			key := eps[i].Addresses[0]
			if !seen[key] {
				seen[key] = true
				out = append(out, i)
			}
		}
	}
	return out
}

// modeFromHints is kube-proxy's topologyModeFromHints, with the reason.
// With ignoreNodeHints, node hints count as absent.
func modeFromHints(eps []Endpoint, nodeName, zone string, ignoreNodeHints bool) (string, string) {
	anyReady, forNode, allNode, forZone, allZone := false, false, true, false, true
	for i := range eps {
		e := &eps[i]
		if len(e.Addresses) == 0 || !proxyReady(e) {
			continue
		}
		anyReady = true
		if ignoreNodeHints || e.Hints == nil || len(e.Hints.ForNodes) == 0 {
			allNode = false
		} else if hasNode(e.Hints, nodeName) {
			forNode = true
		}
		if e.Hints == nil || len(e.Hints.ForZones) == 0 {
			allZone = false
		} else if hasZone(e.Hints, zone) {
			forZone = true
		}
	}
	switch {
	case !anyReady:
		return "", "no ready endpoints: hints play no part"
	case allNode && forNode:
		return PreferSameNode, "every ready endpoint has a node hint and some are for node " + nodeName
	case allZone && forZone:
		return PreferSameZone, "every ready endpoint has a zone hint and some are for zone " + zone
	case !allZone:
		return "", "hints ignored: one or more ready endpoints have no zone hint"
	case zone == "":
		return "", "hints ignored: the node has no topology.kubernetes.io/zone label"
	default:
		return "", "hints ignored: no ready endpoint is hinted for zone " + zone
	}
}
