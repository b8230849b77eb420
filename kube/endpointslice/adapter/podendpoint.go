package adapter

// Pod → slicer.Endpoint: one pod's endpoints, one per address type of
// the Service (the Endpoint conversion of the controller's pods).

import (
	"fmt"
	"unsafe"

	corev1 "k8s.io/api/core/v1"

	"github.com/fairslice/fairslice/slicer"
)

// convert turns one pod into its endpoints, one per address type, in
// steps: whether the pod is an endpoint at all (isEndpointPod), its port
// set (portsOf), its node (nodeOf; a pod on a missing node is skipped
// unless the Service publishes not-ready addresses), then room in the
// arenas for its endpoints and strings (reserve) and each address type's
// endpoint from the pod's IPs of that family (addressesOf, fillPod).
// fresh and left size the arenas: on a Converter's first call, the pods
// left to convert fill one block.
func (c *Converter) convert(m *podMemo, svc *corev1.Service, pod *corev1.Pod, types []slicer.AddressType, nodes NodeGetter, fresh bool, left int) error {
	if !isEndpointPod(pod) {
		m.skip = true
		return nil
	}
	pnr := svc.Spec.PublishNotReadyAddresses
	m.ports = c.portsOf(svc, pod)
	node, err := c.nodeOf(pod, nodes)
	if err != nil {
		*m = podMemo{}
		return err
	}
	if !node.found && !pnr {
		m.errs = append(m.errs, fmt.Errorf("endpointslice: pod %s/%s skipped: node %q not found", pod.Namespace, pod.Name, pod.Spec.NodeName))
		return nil
	}
	shared := sharedFields(svc, pod, node)
	block := 64
	if fresh {
		block = max(block, left)
	}
	c.reserve(m, pod, len(types), block)
	var name, uid string // the arena's copies, made for the first endpoint
	for ti, t := range types {
		addrs := c.addressesOf(m, pod, t, ti == 0, block)
		if addrs == nil {
			continue
		}
		if name == "" && uid == "" {
			name, uid = c.keep(pod.Name, block), c.keep(string(pod.UID), block)
		}
		fillPod(&m.eps[ti], addrs, &shared, name, uid)
	}
	return nil
}

// isEndpointPod reports whether pod can be an endpoint: not in phase
// Succeeded or Failed, and with an IP.
func isEndpointPod(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	return pod.Status.PodIP != "" || len(pod.Status.PodIPs) > 0
}

// nodeOf returns what the plan depends on of pod's node: the last pod's
// if it is the same, else from the node table, else from the nodes
// revalidate looked up in this call, else looked up (and remembered).
func (c *Converter) nodeOf(pod *corev1.Pod, nodes NodeGetter) (*nodeMemo, error) {
	if node := c.lastNode; node != nil && node.name == pod.Spec.NodeName {
		return node, nil
	}
	node := c.found.get(pod.Spec.NodeName)
	if node == nil {
		cur, ok := c.nodes[pod.Spec.NodeName]
		if !ok {
			var err error
			if cur, err = lookupNode(nodes, pod.Spec.NodeName); err != nil {
				return nil, fmt.Errorf("endpointslice: pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			c.nodes[pod.Spec.NodeName] = cur
		}
		node = c.found.put(pod.Spec.NodeName, cur)
	}
	c.lastNode = node
	return node, nil
}

// podFields are the fields a pod's endpoints of every address type
// share.
type podFields struct {
	hostname, nodeName, zone, namespace string
	conds                               slicer.Conditions
}

// sharedFields returns the fields of pod's endpoints for svc: hostname
// when spec.subdomain is the Service's name in its namespace, the node's
// name and zone, and the conditions.
func sharedFields(svc *corev1.Service, pod *corev1.Pod, node *nodeMemo) podFields {
	f := podFields{nodeName: pod.Spec.NodeName, zone: node.zone, namespace: pod.Namespace,
		conds: slicer.PodConditions(PodReady(pod), pod.DeletionTimestamp != nil, svc.Spec.PublishNotReadyAddresses)}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
		f.hostname = pod.Spec.Hostname
	}
	// The endpoint's own strings, side by side with others, so that a
	// sync touches one place per endpoint rather than the scattered pod.
	if node.found {
		f.nodeName = node.name
	}
	if f.namespace == svc.Namespace {
		f.namespace = svc.Namespace
	}
	return f
}

// reserve takes m's endpoints (one per address type) from the endpoint
// arena, and makes room in the string arena for the pod's strings, as
// many times over as block, so that a first call's strings take one
// block of about the size they need.
func (c *Converter) reserve(m *podMemo, pod *corev1.Pod, types, block int) {
	if cap(c.epArena)-len(c.epArena) < types {
		c.epArena = make([]slicer.Endpoint, 0, block*types)
	}
	n := len(c.epArena)
	c.epArena = c.epArena[:n+types]
	m.eps = c.epArena[n : n+types : n+types]
	need := len(pod.Name) + len(pod.UID)
	for _, ip := range pod.Status.PodIPs {
		need += len(ip.IP)
	}
	if cap(c.strArena)-len(c.strArena) < need {
		c.strArena = make([]byte, 0, max(block*need+need/2, 4096))
	}
}

// addressesOf returns pod's IPs of address type t in canonical form, in
// the address arena, or nil if it has none; an IP that does not parse
// is left out, and reported in m.errs when report is set (once per pod).
func (c *Converter) addressesOf(m *podMemo, pod *corev1.Pod, t slicer.AddressType, report bool, block int) []string {
	if cap(c.ipArena)-len(c.ipArena) < len(pod.Status.PodIPs) {
		c.ipArena = make([]string, 0, max(block*len(m.eps), len(pod.Status.PodIPs)))
	}
	start := len(c.ipArena)
	for _, ip := range pod.Status.PodIPs {
		a, v6, err := c.canonicalIP(ip.IP)
		if err != nil {
			if report {
				m.errs = append(m.errs, fmt.Errorf("endpointslice: pod %s/%s: status.podIPs: %w", pod.Namespace, pod.Name, err))
			}
			continue
		}
		if v6 == (t == slicer.IPv6) {
			i := len(c.ipArena) // room checked above; resliced in place as in keep
			c.ipArena = c.ipArena[:i+1]
			c.ipArena[i] = c.keep(a, block)
		}
	}
	if len(c.ipArena) == start {
		return nil
	}
	return c.ipArena[start:len(c.ipArena):len(c.ipArena)]
}

// fillPod writes a pod's endpoint into e, which is zero, field by field:
// assigning a whole Endpoint is a 200-byte copy that takes the
// collector's slow bulk write barrier whenever it is marking, and
// fields that would stay zero are not written.
func fillPod(e *slicer.Endpoint, addrs []string, f *podFields, name, uid string) {
	e.Addresses = addrs
	if f.hostname != "" {
		e.Hostname = f.hostname
	}
	e.NodeName = f.nodeName
	if f.zone != "" {
		e.Zone = f.zone
	}
	e.Conditions = f.conds
	e.TargetRef.Kind = "Pod"
	e.TargetRef.Namespace = f.namespace
	if name != "" {
		e.TargetRef.Name = name
	}
	if uid != "" {
		e.TargetRef.UID = uid
	}
}

// keep returns a copy of s in the string arena. The arena's bytes are
// never written again once a string is made of them.
func (c *Converter) keep(s string, block int) string {
	if len(s) == 0 {
		return ""
	}
	start := len(c.strArena)
	if cap(c.strArena)-start < len(s) {
		c.strArena = make([]byte, 0, max(block*len(s), 4096))
		start = 0
	}
	// Resliced in place (not appended to), which stores only the length:
	// storing the array's pointer again would take a write barrier while
	// the collector marks.
	c.strArena = c.strArena[:start+len(s)]
	copy(c.strArena[start:], s)
	return unsafe.String(&c.strArena[start], len(s))
}

// PodReady reports whether pod's Ready condition is true.
func PodReady(pod *corev1.Pod) bool {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return pod.Status.Conditions[i].Status == corev1.ConditionTrue
		}
	}
	return false
}
