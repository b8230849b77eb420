package adapter

// Service ports → a pod's port set: target ports resolved per pod, and
// port sets interned so that pods share them.

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fairslice/fairslice/slicer"
)

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
