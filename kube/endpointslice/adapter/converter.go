package adapter

// Converter: pods → the desired groups of a Service, with the memory
// that makes a repeated call cheap (what is remembered, and when it is
// forgotten).

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/fairslice/fairslice/slicer"
)

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

// mark is what the no-op check needs of a remembered pod.
type mark struct {
	gen  uint32 // the podGen it was last listed in
	base uint32 // Syncer.base of the last no-op sync that listed it
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
