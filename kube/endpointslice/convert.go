package endpointslice

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"

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

// Converter turns k8s.io/api objects into slicer inputs. It reuses its
// buffers: what Desired returns is valid until the next Desired call, and
// what Existing returns until the next Existing call. A steady-state sync
// then allocates nothing per endpoint. Not safe for concurrent use; the
// zero value is ready to use.
type Converter struct {
	groups []slicer.Group
	ports  []slicer.Port // the current pod's ports
	addrs  []string      // backing store of desired endpoint addresses
	eps    [][]slicer.Endpoint

	slices  []slicer.Slice
	exEps   []slicer.Endpoint
	exAddrs []string
	exPorts []slicer.Port
	exOwner []slicer.OwnerRef
	buf     []byte
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
// reported in the returned error, which joins every such problem while
// the groups still hold everything else, so a controller can write the
// plan and retry later as upstream does. Any other node lookup error
// aborts with no groups.
func (c *Converter) Desired(svc *corev1.Service, pods []*corev1.Pod, nodes NodeGetter) ([]slicer.Group, error) {
	types := slicer.AddressTypesFor(familyStrings(svc.Spec.IPFamilies), svc.Spec.ClusterIP)
	for i := range c.eps {
		c.eps[i] = c.eps[i][:0]
	}
	c.groups = c.groups[:0]
	c.addrs = c.addrs[:0]
	var errs []error
	pnr := svc.Spec.PublishNotReadyAddresses
	headlessNoPorts := len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP == corev1.ClusterIPNone
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
			continue
		}
		c.ports = c.ports[:0]
		if !headlessNoPorts {
			for i := range svc.Spec.Ports {
				sp := &svc.Spec.Ports[i]
				if port, ok := findPort(pod, sp); ok {
					c.ports = append(c.ports, slicer.Port{
						Name: sp.Name, Port: port, Protocol: string(sp.Protocol), AppProtocol: deref(sp.AppProtocol),
					})
				}
			}
		}
		first := c.groupFor(types[0])
		for _, t := range types[1:] {
			c.groupFor(t)
		}

		node, err := nodes.Get(pod.Spec.NodeName)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("endpointslice: looking up node %q of pod %s/%s: %w", pod.Spec.NodeName, pod.Namespace, pod.Name, err)
			}
			node = nil
			if !pnr {
				errs = append(errs, fmt.Errorf("endpointslice: pod %s/%s skipped: node %q not found", pod.Namespace, pod.Name, pod.Spec.NodeName))
				continue
			}
		}
		zone := ""
		if node != nil {
			zone = node.Labels[corev1.LabelTopologyZone]
		}
		hostname := ""
		if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
			hostname = pod.Spec.Hostname
		}
		conds := slicer.PodConditions(podReady(pod), pod.DeletionTimestamp != nil, pnr)
		for ti, t := range types {
			start := len(c.addrs)
			for _, ip := range pod.Status.PodIPs {
				a, v6, err := c.canonicalIP(ip.IP)
				if err != nil {
					if ti == 0 {
						errs = append(errs, fmt.Errorf("endpointslice: pod %s/%s: status.podIPs: %w", pod.Namespace, pod.Name, err))
					}
					continue
				}
				if v6 == (t == slicer.IPv6) {
					c.addrs = append(c.addrs, a)
				}
			}
			if len(c.addrs) == start {
				continue
			}
			gi := first + ti
			c.groups[gi].Endpoints = append(c.groups[gi].Endpoints, slicer.Endpoint{
				Addresses:  c.addrs[start:len(c.addrs):len(c.addrs)],
				Hostname:   hostname,
				NodeName:   pod.Spec.NodeName,
				Zone:       zone,
				Conditions: conds,
				TargetRef:  slicer.ObjectRef{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)},
			})
		}
	}
	for i := range c.groups {
		if i < len(c.eps) {
			c.eps[i] = c.groups[i].Endpoints
		} else {
			c.eps = append(c.eps, c.groups[i].Endpoints)
		}
	}
	return c.groups, errors.Join(errs...)
}

// groupFor returns the index of the group of type t with the current
// pod's ports, adding it if needed. The groups of one port set are
// consecutive, in the order of the Service's address types.
func (c *Converter) groupFor(t slicer.AddressType) int {
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
	c.groups = append(c.groups, slicer.Group{AddressType: t, Ports: slices.Clone(c.ports), Endpoints: eps})
	if c.groups[i].Ports == nil {
		c.groups[i].Ports = []slicer.Port{}
	}
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
			for _, p := range pod.Spec.Containers[i].Ports {
				if p.Name == name && p.Protocol == sp.Protocol {
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

func podReady(pod *corev1.Pod) bool {
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
// zero ObjectRef. Labels and annotations are shared with the objects, not
// copied.
func (c *Converter) Existing(in []*discovery.EndpointSlice) []slicer.Slice {
	n, na, np, no := 0, 0, 0, 0
	for _, s := range in {
		n += len(s.Endpoints)
		np += len(s.Ports)
		no += len(s.OwnerReferences)
		for i := range s.Endpoints {
			na += len(s.Endpoints[i].Addresses)
		}
	}
	c.exEps = slices.Grow(c.exEps[:0], n)
	c.exAddrs = slices.Grow(c.exAddrs[:0], na)
	c.exPorts = slices.Grow(c.exPorts[:0], np)
	c.exOwner = slices.Grow(c.exOwner[:0], no)
	c.slices = c.slices[:0]
	for _, s := range in {
		e0, p0, o0 := len(c.exEps), len(c.exPorts), len(c.exOwner)
		for i := range s.Endpoints {
			c.exEps = append(c.exEps, c.endpoint(&s.Endpoints[i]))
		}
		for i := range s.Ports {
			p := &s.Ports[i]
			c.exPorts = append(c.exPorts, slicer.Port{
				Name: deref(p.Name), Port: deref(p.Port), Protocol: string(deref(p.Protocol)), AppProtocol: deref(p.AppProtocol),
			})
		}
		for _, o := range s.OwnerReferences {
			c.exOwner = append(c.exOwner, slicer.OwnerRef{
				APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: string(o.UID),
				Controller: deref(o.Controller), BlockOwnerDeletion: deref(o.BlockOwnerDeletion),
			})
		}
		c.slices = append(c.slices, slicer.Slice{
			Name:         s.Name,
			GenerateName: s.GenerateName,
			Namespace:    s.Namespace,
			AddressType:  slicer.AddressType(s.AddressType),
			Ports:        c.exPorts[p0:len(c.exPorts):len(c.exPorts)],
			Endpoints:    c.exEps[e0:len(c.exEps):len(c.exEps)],
			Labels:       s.Labels,
			Annotations:  s.Annotations,
			Owners:       c.exOwner[o0:len(c.exOwner):len(c.exOwner)],
		})
	}
	return c.slices
}

func (c *Converter) endpoint(e *discovery.Endpoint) slicer.Endpoint {
	a0 := len(c.exAddrs)
	c.exAddrs = append(c.exAddrs, e.Addresses...)
	out := slicer.Endpoint{
		Addresses: c.exAddrs[a0:len(c.exAddrs):len(c.exAddrs)],
		Hostname:  deref(e.Hostname),
		NodeName:  deref(e.NodeName),
		Zone:      deref(e.Zone),
		Conditions: slicer.Conditions{
			Ready: tristate(e.Conditions.Ready), Serving: tristate(e.Conditions.Serving), Terminating: tristate(e.Conditions.Terminating),
		},
	}
	if r := e.TargetRef; r != nil {
		out.TargetRef = slicer.ObjectRef{
			Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: string(r.UID),
			APIVersion: r.APIVersion, ResourceVersion: r.ResourceVersion, FieldPath: r.FieldPath,
		}
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
	return out
}

func tristate(b *bool) slicer.Tristate {
	if b == nil {
		return slicer.Unset
	}
	return slicer.Of(*b)
}
