package adapter

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fairslice/fairslice/kube/internal/podload"
	"github.com/fairslice/fairslice/slicer"
)

// NodeGetter looks nodes up by name; a client-go NodeLister is one. A
// missing node is reported with an error for which
// k8s.io/apimachinery/pkg/api/errors.IsNotFound is true.
type NodeGetter interface {
	Get(name string) (*corev1.Node, error)
}

// ServiceFacts returns the slicer facts about svc, with the given trigger
// time (the TriggerTimeTracker's, or zero).
func ServiceFacts(svc *corev1.Service, triggerTime time.Time) slicer.Service {
	families := make([]string, len(svc.Spec.IPFamilies))
	for i, f := range svc.Spec.IPFamilies {
		families[i] = string(f)
	}
	return slicer.Service{
		Namespace:                svc.Namespace,
		Name:                     svc.Name,
		UID:                      string(svc.UID),
		Labels:                   svc.Labels,
		AddressTypes:             slicer.AddressTypesFor(families, svc.Spec.ClusterIP),
		Headless:                 svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone,
		PublishNotReadyAddresses: svc.Spec.PublishNotReadyAddresses,
		Deleting:                 svc.DeletionTimestamp != nil,
		TriggerTime:              triggerTime,
	}
}

// Converter turns k8s.io/api objects into slicer inputs. Not safe for
// concurrent use; the zero value is ready to use.
//
// It remembers what it converted, by object pointer: a pod seen in the
// previous Desired call, with the same Service spec and the same zone for
// its node, is not converted again, and neither is an EndpointSlice seen
// in the previous Existing call. This relies on the informer contract that
// a cached object is never modified in place (a change replaces the
// pointer): do not pass objects you modify afterwards, or use a new
// Converter. Of a node it remembers only what the plan depends on, whether
// it exists and its topology.kubernetes.io/zone label, and looks it up
// again each call: a replaced Node object (a kubelet's status update)
// forgets nothing; a node that appears, disappears or changes zone, or a
// changed Service spec, forgets every remembered pod. A steady-state sync
// thus allocates nothing per endpoint, and neither does the first sync of
// a new Converter (its memory is built from a few large arrays).
//
// What Desired returns is valid until the next Desired call, and what
// Existing returns until the next Existing call. Neither may be modified:
// both can be the Converter's memory (the endpoints of a first Desired
// call are, when the Service has one address type and its pods one port
// set).
type Converter struct {
	groups []slicer.Group
	ports  []slicer.Port // the current pod's ports
	eps    [][]slicer.Endpoint
	buf    []byte

	gen       uint32        // Existing calls
	podGen    uint32        // Desired calls and same-pod checks
	epoch     uint32        // times everything was forgotten
	valid     bool          // svc, svcMeta and nodes describe the memory
	indexed   bool          // pods is built (from listed)
	pods      podIndex      // index into memo and seen
	listed    []*corev1.Pod // pods of the first call since forgetting: memo[i] is listed[i]'s
	memo      []podMemo
	seen      []mark              // per memo entry (dense: the no-op check reads only this and the index)
	nodes     map[string]nodeMemo // what the remembered pods saw of their nodes
	svc       corev1.ServiceSpec  // spec the remembered pods were converted for
	svcMeta   [2]string           // its namespace and name
	portSets  [][]slicer.Port     // interned port sets
	epArena   []slicer.Endpoint   // backing store of podMemo.eps
	ipArena   []string            // backing store of endpoint addresses
	strArena  []byte              // backing store of endpoint strings, append-only
	lastNode  *nodeMemo           // the node of the last pod converted (in found), or nil
	found     nodeTable           // the nodes of c.nodes, looked up per pod
	resolved  []int64             // the current pod's target ports (see portsOf)
	lastRes   []int64             // the target ports lastPorts was made from
	lastPorts []slicer.Port       // interned port set of the last pod converted (nil: none yet)
	lazy      []slicer.Endpoint   // if not nil, memo is listed's pods with these endpoints and lazyPorts, to write out
	lazyPorts []slicer.Port
	touched   uintptr // sum of the loads ahead (see podload.Ahead), kept so they are not optimized away

	slices []slicer.Slice
	exist  map[*discovery.EndpointSlice]*sliceMemo
}

// podMemo is a pod as converted for the remembered Service.
type podMemo struct {
	skip  bool // not an endpoint (terminal or no IP)
	ports []slicer.Port
	eps   []slicer.Endpoint // per address type of the Service (at most two), Addresses nil if none
	errs  []error
}

// nodeMemo is what the plan depends on of a node.
type nodeMemo struct {
	found bool
	zone  string
	name  string // shared by the endpoints on the node
}

// mark is what the no-op check needs of a remembered pod.
type mark struct {
	gen  uint32 // the podGen it was last listed in
	base uint32 // Syncer.base of the last no-op sync that listed it
}

type sliceMemo struct {
	gen   uint32
	slice slicer.Slice
}

// Desired returns the desired endpoint groups for svc from the pods its
// selector matches, as upstream's reconciler builds them:
//
//   - pods in phase Succeeded or Failed, and pods without an IP, are left
//     out; terminating pods are included;
//   - each pod maps to one port set: one port per Service port whose
//     target port resolves for it (a number as is; a name through the
//     container ports, and sidecar init containers' ports, of that name
//     and protocol);
//   - its endpoint per address type holds its status.podIPs of that
//     family in canonical form; a pod without one is not an endpoint of
//     that type, but its port set is still desired;
//   - hostname is spec.hostname when spec.subdomain is the Service's name
//     in the same namespace; zone is the node's topology.kubernetes.io/zone
//     label; conditions follow slicer.PodConditions.
//
// A pod whose node is missing is left out, unless the Service publishes
// not-ready addresses (then it has no zone), and an IP that does not
// parse is left out (upstream would publish it as "<nil>"). Both are
// reported in a *SkippedPodsError, while the groups still hold everything
// else, so a controller can write the plan and retry later as upstream
// does. Any other error (a node lookup that failed, a nil argument) is a
// failure: the groups are nil and nothing must be written, since an empty
// desired state would delete every endpoint of the Service. Tell them
// apart with errors.As, as the package example does.
func (c *Converter) Desired(svc *corev1.Service, pods []*corev1.Pod, nodes NodeGetter) ([]slicer.Group, error) {
	groups, skipped, err := c.desired(svc, pods, nodes)
	if err != nil {
		return nil, err
	}
	if skipped != nil {
		return groups, skipped
	}
	return groups, nil
}

// SkippedPodsError reports the pods Desired left out (a missing node, an
// unparsable IP). The groups returned with it hold every other pod: a
// controller writes the plan and retries the Service later.
type SkippedPodsError struct {
	Errs []error // one per problem
}

// Error joins the problems, one per line.
func (e *SkippedPodsError) Error() string { return errors.Join(e.Errs...).Error() }

// Unwrap returns the problems.
func (e *SkippedPodsError) Unwrap() []error { return e.Errs }

// checkArgs reports nil arguments.
func checkArgs(svc *corev1.Service, pods []*corev1.Pod, nodes NodeGetter) error {
	var errs []error
	if svc == nil {
		errs = append(errs, errors.New("endpointslice: Service: must not be nil"))
	}
	if nodes == nil {
		errs = append(errs, errors.New("endpointslice: NodeGetter: must not be nil"))
	}
	for i, p := range pods {
		if p == nil {
			errs = append(errs, fmt.Errorf("endpointslice: pods[%d]: must not be nil", i))
		}
	}
	return errors.Join(errs...)
}

// desired is Desired with the pods left out (skipped, nil or a
// *SkippedPodsError) told apart from a failure (err).
func (c *Converter) desired(svc *corev1.Service, pods []*corev1.Pod, nodes NodeGetter) (groups []slicer.Group, skipped *SkippedPodsError, err error) {
	if err := checkArgs(svc, pods, nodes); err != nil {
		return nil, nil, err
	}
	if err := c.revalidate(svc, nodes); err != nil {
		return nil, nil, err
	}
	c.podGen++
	types := slicer.AddressTypesFor(familyStrings(svc.Spec.IPFamilies), svc.Spec.ClusterIP)
	for i := range c.eps {
		c.eps[i] = c.eps[i][:0]
	}
	c.groups = c.groups[:0]
	var errs []error
	if !c.indexed && c.listed == nil {
		if err := c.first(svc, pods, types, nodes); err != nil {
			return nil, nil, err
		}
		c.listed = slices.Clone(pods)
		for i := range c.memo { // empty if lazy: no problems then
			errs = append(errs, c.memo[i].errs...)
		}
	} else {
		c.index()
		for _, pod := range pods {
			i, ok := c.pods.get(pod)
			if !ok {
				i = int32(len(c.memo))
				c.memo = append(c.memo, podMemo{})
				if err := c.convert(&c.memo[i], svc, pod, types, nodes, false, 0); err != nil {
					c.memo = c.memo[:i]
					return nil, nil, err
				}
				c.seen = append(c.seen, mark{})
				c.pods.put(pod, i)
			}
			c.seen[i].gen = c.podGen
			errs = append(errs, c.memo[i].errs...)
		}
		c.group(pods, types, false)
	}
	if len(c.memo) > 2*len(pods)+64 {
		c.compactMemo(len(pods))
	}
	if errs != nil {
		skipped = &SkippedPodsError{Errs: errs}
	}
	return c.groups, skipped, nil
}

// first converts the pods on a Converter's first call (since
// forgetting). With T address types, the endpoints of pods[k] are
// block[k*T:(k+1)*T] of one block. When every pod has one endpoint of the
// Service's only address type, one port set and no problem (the common
// case), the block is the group as it stands, without a copy, and the
// memory of each pod, which the block says in full, is only written out
// (lazy) if a second call comes. Otherwise memo[k] is pods[k]'s.
func (c *Converter) first(svc *corev1.Service, pods []*corev1.Pod, types []slicer.AddressType, nodes NodeGetter) error {
	n, t := len(pods), len(types)
	c.memo = c.memo[:0]
	c.seen = slices.Grow(c.seen[:0], n)[:n]
	for i := range c.seen {
		c.seen[i] = mark{gen: c.podGen}
	}
	block := make([]slicer.Endpoint, n*t)
	flat := t == 1
	var flatPorts []slicer.Port
	var touched uintptr
	for k, pod := range pods {
		if k%podload.Batch == 0 {
			touched += podload.Ahead(pods, k)
		}
		c.epArena = block[:k*t] // convert takes the next t endpoints
		var m podMemo
		if err := c.convert(&m, svc, pod, types, nodes, true, n-k); err != nil {
			c.memo, c.seen = c.memo[:0], c.seen[:0] // nothing is remembered from a failed first call
			return err
		}
		if flat {
			if k == 0 {
				flatPorts = m.ports
			}
			if !m.skip && m.errs == nil && len(m.eps) == 1 && m.eps[0].Addresses != nil && samePorts(m.ports, flatPorts) {
				continue
			}
			flat = false
			c.memo = slices.Grow(c.memo, n)
			c.memo = append(c.memo, flatMemo(block[:k], flatPorts)...)
		}
		c.memo = append(c.memo, m)
	}
	c.epArena = block
	c.touched += touched
	if !flat {
		c.group(pods, types, true)
		return nil
	}
	if n > 0 {
		c.lazy, c.lazyPorts = block[:n:n], flatPorts
		c.ports = append(c.ports[:0], flatPorts...)
		c.groups = append(c.groups, slicer.Group{AddressType: types[0], Ports: c.intern(c.ports), Endpoints: block[:n:n]})
	}
	// The block is the memory of the pods: the next call must not reuse
	// it for its groups.
	c.eps = c.eps[:0]
	return nil
}

// flatMemo returns the memory of pods whose endpoints are eps, one each,
// all with ports.
func flatMemo(eps []slicer.Endpoint, ports []slicer.Port) []podMemo {
	out := make([]podMemo, len(eps))
	for k := range eps {
		out[k] = podMemo{ports: ports, eps: eps[k : k+1 : k+1]}
	}
	return out
}

// group fills c.groups from the memory of pods, in their order, and
// keeps the groups' arrays for reuse by the next call.
// On a first call memo[k] is pods[k]'s; later the index tells.
func (c *Converter) group(pods []*corev1.Pod, types []slicer.AddressType, fresh bool) {
	var lastPorts []slicer.Port
	first := -1
	for k, pod := range pods {
		i := int32(k)
		if !fresh {
			i, _ = c.pods.get(pod) // every pod is in it by now
		}
		m := &c.memo[i]
		if m.skip {
			continue
		}
		if first < 0 || !samePorts(m.ports, lastPorts) {
			c.ports = append(c.ports[:0], m.ports...)
			first = c.groupFor(types[0], len(pods))
			for _, t := range types[1:] {
				c.groupFor(t, len(pods))
			}
			lastPorts = m.ports
		}
		for ti := range m.eps { // none for a pod whose node is missing
			if m.eps[ti].Addresses != nil {
				g := &c.groups[first+ti]
				g.Endpoints = append(g.Endpoints, m.eps[ti])
			}
		}
	}
	for i := range c.groups {
		if i < len(c.eps) {
			c.eps[i] = c.groups[i].Endpoints
		} else {
			c.eps = append(c.eps, c.groups[i].Endpoints)
		}
	}
}

// index builds the pod index of the first call's pods.
func (c *Converter) index() {
	if c.listed == nil {
		return
	}
	if c.lazy != nil {
		c.memo = append(c.memo[:0], flatMemo(c.lazy, c.lazyPorts)...)
		c.lazy, c.lazyPorts = nil, nil
	}
	c.pods.reset(len(c.listed))
	for i, p := range c.listed {
		if _, dup := c.pods.get(p); !dup {
			c.pods.put(p, int32(i))
		}
	}
	c.listed = nil
	c.indexed = true
}

// compactMemo forgets the pods not seen in the last call.
func (c *Converter) compactMemo(n int) {
	c.index()
	memo := make([]podMemo, 0, n)
	seen := make([]mark, 0, n)
	old := c.pods.slots
	c.pods.reset(n)
	for _, s := range old {
		if s.p == nil || c.seen[s.i].gen != c.podGen {
			continue
		}
		c.pods.put(s.p, int32(len(memo)))
		memo = append(memo, c.memo[s.i])
		seen = append(seen, c.seen[s.i])
	}
	c.memo, c.seen = memo, seen
}

// revalidate forgets the remembered pods when the Service's spec changed,
// or a remembered node appeared, disappeared or changed zone.
func (c *Converter) revalidate(svc *corev1.Service, nodes NodeGetter) error {
	if !c.valid || c.svcMeta != [2]string{svc.Namespace, svc.Name} || !equality.Semantic.DeepEqual(&c.svc, &svc.Spec) {
		c.forget(svc)
		return nil
	}
	for name, old := range c.nodes {
		cur, err := lookupNode(nodes, name)
		if err != nil {
			return fmt.Errorf("endpointslice: %w", err)
		}
		if cur != old {
			c.forget(svc)
			return nil
		}
	}
	return nil
}

// lookupNode returns what the plan depends on of the named node.
func lookupNode(nodes NodeGetter, name string) (nodeMemo, error) {
	n, err := nodes.Get(name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nodeMemo{}, nil
		}
		return nodeMemo{}, fmt.Errorf("looking up node %q: %w", name, err)
	}
	if n == nil {
		return nodeMemo{}, nil
	}
	return nodeMemo{found: true, zone: n.Labels[corev1.LabelTopologyZone], name: name}, nil
}

func (c *Converter) forget(svc *corev1.Service) {
	c.epoch++
	c.valid = true
	c.pods.reset(0)
	c.indexed = false
	c.listed = nil
	c.lazy, c.lazyPorts = nil, nil
	c.memo = c.memo[:0]
	c.seen = c.seen[:0]
	c.nodes = make(map[string]nodeMemo)
	c.svc = *svc.Spec.DeepCopy()
	c.svcMeta = [2]string{svc.Namespace, svc.Name}
	c.portSets = nil
	c.epArena, c.ipArena, c.strArena = nil, nil, nil
	c.lastNode = nil
	c.found.reset()
	c.lastRes, c.lastPorts = c.lastRes[:0], nil
}

// convert turns one pod into its endpoints, one per address type.
// fresh and left size the arenas: on a Converter's first call, the pods
// left to convert fill one block.
func (c *Converter) convert(m *podMemo, svc *corev1.Service, pod *corev1.Pod, types []slicer.AddressType, nodes NodeGetter, fresh bool, left int) error {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed ||
		pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		m.skip = true
		return nil
	}
	pnr := svc.Spec.PublishNotReadyAddresses
	m.ports = c.portsOf(svc, pod)

	node := c.lastNode
	if node == nil || node.name != pod.Spec.NodeName {
		if node = c.found.get(pod.Spec.NodeName); node == nil {
			cur, ok := c.nodes[pod.Spec.NodeName] // revalidate looked these up in this call
			if !ok {
				var err error
				if cur, err = lookupNode(nodes, pod.Spec.NodeName); err != nil {
					*m = podMemo{}
					return fmt.Errorf("endpointslice: pod %s/%s: %w", pod.Namespace, pod.Name, err)
				}
				c.nodes[pod.Spec.NodeName] = cur
			}
			node = c.found.put(pod.Spec.NodeName, cur)
		}
		c.lastNode = node
	}
	if !node.found && !pnr {
		m.errs = append(m.errs, fmt.Errorf("endpointslice: pod %s/%s skipped: node %q not found", pod.Namespace, pod.Name, pod.Spec.NodeName))
		return nil
	}
	zone := node.zone
	hostname := ""
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
		hostname = pod.Spec.Hostname
	}
	// The endpoint's own strings, side by side in one block, so that a
	// sync touches one place per endpoint rather than the scattered pod.
	nodeName := pod.Spec.NodeName
	if node.found {
		nodeName = node.name
	}
	ns := pod.Namespace
	if ns == svc.Namespace {
		ns = svc.Namespace
	}
	conds := slicer.PodConditions(PodReady(pod), pod.DeletionTimestamp != nil, pnr)
	block := 64
	if fresh {
		block = max(block, left)
	}
	if cap(c.epArena)-len(c.epArena) < len(types) {
		c.epArena = make([]slicer.Endpoint, 0, block*len(types))
	}
	n := len(c.epArena)
	c.epArena = c.epArena[:n+len(types)]
	m.eps = c.epArena[n : n+len(types) : n+len(types)]
	// Room in the string arena for the pod's strings, as many times over
	// as there are pods left on a first call, so that its strings take
	// one block of about the size they need.
	need := len(pod.Name) + len(pod.UID)
	for _, ip := range pod.Status.PodIPs {
		need += len(ip.IP)
	}
	if cap(c.strArena)-len(c.strArena) < need {
		c.strArena = make([]byte, 0, max(block*need+need/2, 4096))
	}
	var name, uid string // the arena's copies, made for the first endpoint
	for ti, t := range types {
		if cap(c.ipArena)-len(c.ipArena) < len(pod.Status.PodIPs) {
			c.ipArena = make([]string, 0, max(block*len(types), len(pod.Status.PodIPs)))
		}
		start := len(c.ipArena)
		for _, ip := range pod.Status.PodIPs {
			a, v6, err := c.canonicalIP(ip.IP)
			if err != nil {
				if ti == 0 {
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
			continue
		}
		addrs := c.ipArena[start:len(c.ipArena):len(c.ipArena)]
		// Field by field into the arena's memory, which is zero (the
		// arenas are only appended to): assigning a whole Endpoint is a
		// 200-byte copy that takes the collector's slow bulk write
		// barrier whenever it is marking.
		e := &m.eps[ti]
		e.Addresses = addrs
		if hostname != "" {
			e.Hostname = hostname
		}
		e.NodeName = nodeName
		if zone != "" {
			e.Zone = zone
		}
		e.Conditions = conds
		e.TargetRef.Kind = "Pod"
		e.TargetRef.Namespace = ns
		if name == "" && uid == "" {
			name, uid = c.keep(pod.Name, block), c.keep(string(pod.UID), block)
		}
		if name != "" {
			e.TargetRef.Name = name
		}
		if uid != "" {
			e.TargetRef.UID = uid
		}
	}
	return nil
}

// portsOf returns the interned port set of pod: one port per Service
// port whose target port resolves for it. Pods mostly resolve their target
// ports alike, so the set is only built and interned when the resolved
// ports differ from the last pod's.
func (c *Converter) portsOf(svc *corev1.Service, pod *corev1.Pod) []slicer.Port {
	if len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return c.intern(nil)
	}
	np := len(svc.Spec.Ports)
	if cap(c.resolved) < np {
		c.resolved = make([]int64, np)
	}
	c.resolved = c.resolved[:np]
	same := c.lastPorts != nil && len(c.lastRes) == np
	for i := range svc.Spec.Ports {
		v := int64(unresolved)
		if port, ok := findPort(pod, &svc.Spec.Ports[i]); ok {
			v = int64(port)
		}
		c.resolved[i] = v
		same = same && c.lastRes[i] == v
	}
	if same {
		return c.lastPorts
	}
	c.ports = c.ports[:0]
	for i, port := range c.resolved {
		if port != unresolved {
			sp := &svc.Spec.Ports[i]
			c.ports = append(c.ports, slicer.Port{
				Name: sp.Name, Port: int32(port), Protocol: string(sp.Protocol), AppProtocol: deref(sp.AppProtocol),
			})
		}
	}
	c.lastPorts = c.intern(c.ports)
	c.lastRes = append(c.lastRes[:0], c.resolved...)
	return c.lastPorts
}

// unresolved marks a Service port whose target port a pod does not have
// (outside the range of int32 ports).
const unresolved = -1 << 40

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

// samePorts reports whether two interned port sets are the same one.
func samePorts(a, b []slicer.Port) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// intern returns a shared copy of ports.
func (c *Converter) intern(ports []slicer.Port) []slicer.Port {
	for _, p := range c.portSets {
		if slices.Equal(p, ports) {
			return p
		}
	}
	p := slices.Clone(ports)
	if p == nil {
		p = []slicer.Port{}
	}
	c.portSets = append(c.portSets, p)
	return p
}

// groupFor returns the index of the group of type t with the current
// pod's ports, adding it if needed. The groups of one port set are
// consecutive, in the order of the Service's address types.
func (c *Converter) groupFor(t slicer.AddressType, n int) int {
	for i := range c.groups {
		if c.groups[i].AddressType == t && slices.Equal(c.groups[i].Ports, c.ports) {
			return i
		}
	}
	i := len(c.groups)
	var eps []slicer.Endpoint
	if i < len(c.eps) {
		eps = c.eps[i][:0]
	}
	if cap(eps) < n && i == 0 {
		eps = make([]slicer.Endpoint, 0, n) // most pods share the first port set
	}
	c.groups = append(c.groups, slicer.Group{AddressType: t, Ports: c.intern(c.ports), Endpoints: eps})
	return i
}

// findPort resolves a Service port's target port for pod.
func findPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, bool) {
	switch sp.TargetPort.Type {
	case intstr.Int:
		return int32(sp.TargetPort.IntValue()), true
	case intstr.String:
		name := sp.TargetPort.StrVal
		for i := range pod.Spec.Containers {
			ports := pod.Spec.Containers[i].Ports
			for j := range ports {
				if p := &ports[j]; p.Name == name && p.Protocol == sp.Protocol {
					return p.ContainerPort, true
				}
			}
		}
		for i := range pod.Spec.InitContainers {
			ic := &pod.Spec.InitContainers[i]
			if ic.RestartPolicy == nil || *ic.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				continue
			}
			for _, p := range ic.Ports {
				if p.Name == name && p.Protocol == sp.Protocol {
					return p.ContainerPort, true
				}
			}
		}
	}
	return 0, false
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

// canonicalIP parses ip leniently (IPv4 octets may have leading zeros, as
// upstream's ParseIPSloppy allows) and returns its canonical form, reusing
// ip when it is canonical already, and whether it is IPv6 (an IPv4-mapped
// IPv6 address counts as IPv4).
func (c *Converter) canonicalIP(ip string) (string, bool, error) {
	if canonicalIPv4(ip) {
		return ip, false, nil
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Zone() != "" {
		var ok bool
		if a, ok = sloppyIPv4(ip); !ok {
			return "", false, fmt.Errorf("%q is not an IP address", ip)
		}
	}
	if a.Is4() && err == nil {
		return ip, false, nil // netip accepts only the canonical dotted quad
	}
	a = a.Unmap()
	c.buf = a.AppendTo(c.buf[:0])
	if string(c.buf) == ip {
		return ip, a.Is6(), nil
	}
	return string(c.buf), a.Is6(), nil
}

// canonicalIPv4 reports whether s is an IPv4 address in canonical form:
// four decimal parts of at most 255, without leading zeros, separated by
// dots. It is the common case of a pod IP, told without parsing.
func canonicalIPv4(s string) bool {
	if len(s) < len("0.0.0.0") || len(s) > len("255.255.255.255") {
		return false
	}
	dots, digits, part := 0, 0, 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '.' {
			if digits == 0 {
				return false
			}
			dots++
			digits, part = 0, 0
			continue
		}
		if ch < '0' || ch > '9' || digits > 0 && part == 0 {
			return false // not a digit, or after a leading zero
		}
		part = part*10 + int(ch-'0')
		digits++
		if part > 255 {
			return false
		}
	}
	return dots == 3 && digits > 0
}

// sloppyIPv4 parses a dotted quad whose parts may have leading zeros
// (read as decimal).
func sloppyIPv4(s string) (netip.Addr, bool) {
	var b [4]byte
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	for i, p := range parts {
		if p == "" || len(p) > 3 || strings.TrimLeft(p, "0123456789") != "" {
			return netip.Addr{}, false
		}
		n, err := strconv.Atoi(p)
		if err != nil || n > 255 {
			return netip.Addr{}, false
		}
		b[i] = byte(n)
	}
	return netip.AddrFrom4(b), true
}

func familyStrings(fs []corev1.IPFamily) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Existing converts the slices the controller lists (labelled with the
// Service's name and the controller's name) into slicer slices. Nil
// pointers become zero values: a nil port name, protocol or app protocol
// is "", a nil port 0, nil conditions Unset, a nil target reference the
// zero ObjectRef. Labels, annotations and endpoint addresses are shared
// with the objects, not copied. A nil slice is an error.
func (c *Converter) Existing(in []*discovery.EndpointSlice) ([]slicer.Slice, error) {
	return c.existing(in)
}

func (c *Converter) existing(in []*discovery.EndpointSlice) ([]slicer.Slice, error) {
	var errs []error
	for i, s := range in {
		if s == nil {
			errs = append(errs, fmt.Errorf("endpointslice: existing[%d]: must not be nil", i))
		}
	}
	if errs != nil {
		return nil, errors.Join(errs...)
	}
	if c.exist == nil {
		c.exist = make(map[*discovery.EndpointSlice]*sliceMemo, len(in))
	}
	c.gen++
	c.slices = c.slices[:0]
	var fresh []*discovery.EndpointSlice // not converted before
	eps, ports, owners := 0, 0, 0
	for _, s := range in {
		if c.exist[s] == nil {
			fresh = append(fresh, s)
			eps += len(s.Endpoints)
			ports += len(s.Ports)
			owners += len(s.OwnerReferences)
		}
	}
	if fresh != nil {
		// One block each for the new slices' memos, endpoints, ports and
		// owners.
		memos := make([]sliceMemo, len(fresh))
		a := sliceArena{
			eps:    make([]slicer.Endpoint, eps),
			ports:  make([]slicer.Port, ports),
			owners: make([]slicer.OwnerRef, owners),
		}
		for i, s := range fresh {
			memos[i].slice = a.convert(s)
			c.exist[s] = &memos[i]
		}
	}
	for _, s := range in {
		m := c.exist[s]
		m.gen = c.gen
		c.slices = append(c.slices, m.slice)
	}
	if len(c.exist) > 2*len(in)+16 {
		for s, m := range c.exist {
			if m.gen != c.gen {
				delete(c.exist, s)
			}
		}
	}
	return c.slices, nil
}

// sliceArena is the backing store of converted slices.
type sliceArena struct {
	eps    []slicer.Endpoint
	ports  []slicer.Port
	owners []slicer.OwnerRef
}

// take returns the first n elements of *s, removing them.
func take[T any](s *[]T, n int) []T {
	out := (*s)[:n:n]
	*s = (*s)[n:]
	return out
}

// convert converts one EndpointSlice into the arena's space.
func (a *sliceArena) convert(s *discovery.EndpointSlice) slicer.Slice {
	out := slicer.Slice{
		Name:         s.Name,
		GenerateName: s.GenerateName,
		Namespace:    s.Namespace,
		AddressType:  slicer.AddressType(s.AddressType),
		Ports:        take(&a.ports, len(s.Ports)),
		Endpoints:    take(&a.eps, len(s.Endpoints)),
		Labels:       s.Labels,
		Annotations:  s.Annotations,
	}
	for i := range s.Endpoints {
		fillEndpoint(&out.Endpoints[i], &s.Endpoints[i])
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		out.Ports[i] = slicer.Port{Name: deref(p.Name), Port: deref(p.Port), Protocol: string(deref(p.Protocol)), AppProtocol: deref(p.AppProtocol)}
	}
	if len(s.OwnerReferences) > 0 {
		out.Owners = take(&a.owners, len(s.OwnerReferences))
		for i, o := range s.OwnerReferences {
			out.Owners[i] = slicer.OwnerRef{
				APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: string(o.UID),
				Controller: deref(o.Controller), BlockOwnerDeletion: deref(o.BlockOwnerDeletion),
			}
		}
	}
	return out
}

// fillEndpoint converts e into out, which is zero, field by field (see
// convert on why not as one struct); fields that would be zero are not
// written.
func fillEndpoint(out *slicer.Endpoint, e *discovery.Endpoint) {
	out.Addresses = e.Addresses
	if e.Hostname != nil && *e.Hostname != "" {
		out.Hostname = *e.Hostname
	}
	if e.NodeName != nil && *e.NodeName != "" {
		out.NodeName = *e.NodeName
	}
	if e.Zone != nil && *e.Zone != "" {
		out.Zone = *e.Zone
	}
	out.Conditions = slicer.Conditions{
		Ready: tristate(e.Conditions.Ready), Serving: tristate(e.Conditions.Serving), Terminating: tristate(e.Conditions.Terminating),
	}
	if r := e.TargetRef; r != nil {
		t := &out.TargetRef
		setString(&t.Kind, r.Kind)
		setString(&t.Namespace, r.Namespace)
		setString(&t.Name, r.Name)
		setString(&t.UID, string(r.UID))
		setString(&t.APIVersion, r.APIVersion)
		setString(&t.ResourceVersion, r.ResourceVersion)
		setString(&t.FieldPath, r.FieldPath)
	}
	if h := e.Hints; h != nil {
		out.Hints = &slicer.Hints{}
		for _, z := range h.ForZones {
			out.Hints.ForZones = append(out.Hints.ForZones, z.Name)
		}
		for _, n := range h.ForNodes {
			out.Hints.ForNodes = append(out.Hints.ForNodes, n.Name)
		}
	}
}

// setString sets *dst, which is "", to s unless s is empty too (a store
// of a pointer costs a write barrier while the collector marks).
func setString(dst *string, s string) {
	if s != "" {
		*dst = s
	}
}

func tristate(b *bool) slicer.Tristate {
	if b == nil {
		return slicer.Unset
	}
	return slicer.Of(*b)
}
