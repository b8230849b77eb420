package topology

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/fairslice/fairslice/slicer"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Skipped is a pod left out of the Service's endpoints, and why.
type Skipped struct {
	Pod    string
	Reason string
}

// ServiceFromAPI returns the slicer's view of svc, with TopologyHints set
// so that the slicer leaves hints to topology.HintPlan.
func ServiceFromAPI(svc *corev1.Service) slicer.Service {
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
		TopologyHints:            true,
	}
}

// PodsToGroups turns a Service's pods into the slicer's desired endpoint
// groups as upstream's EndpointSlice controller does for what topology
// reads: terminal pods and pods without status.podIPs are left out; a pod
// whose node is unknown is left out unless publishNotReadyAddresses is set
// (then it has no zone); ready is publishNotReadyAddresses or (the pod's
// Ready condition and no deletion timestamp); the zone is the node's
// topology.kubernetes.io/zone label; the hostname is set as upstream sets
// it for headless Services. Ports: a numeric targetPort (0 means the
// Service port), or a named one looked up in the pod's container ports of
// the same protocol; a port that cannot be resolved is left out.
func PodsToGroups(svc *corev1.Service, pods []*corev1.Pod, nodes []*corev1.Node) ([]slicer.Group, []Skipped, error) {
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	s := ServiceFromAPI(svc)
	type key struct {
		at    slicer.AddressType
		ports string
	}
	var groups []slicer.Group
	index := map[key]int{}
	var skipped []Skipped
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			skipped = append(skipped, Skipped{p.Name, "terminal phase " + string(p.Status.Phase)})
			continue
		}
		if len(p.Status.PodIPs) == 0 {
			reason := "no status.podIPs"
			if p.Status.PodIP != "" {
				reason += " (upstream reads only status.podIPs, not status.podIP)"
			}
			skipped = append(skipped, Skipped{p.Name, reason})
			continue
		}
		node := byName[p.Spec.NodeName]
		if node == nil && !svc.Spec.PublishNotReadyAddresses {
			skipped = append(skipped, Skipped{p.Name, fmt.Sprintf("node %q not found", p.Spec.NodeName)})
			continue
		}
		serving := podReady(p)
		terminating := p.DeletionTimestamp != nil
		ports := podPorts(svc, p)
		for _, at := range s.AddressTypes {
			addrs, err := addresses(p, at)
			if err != nil {
				return nil, nil, err
			}
			if len(addrs) == 0 {
				continue
			}
			e := slicer.Endpoint{
				Addresses:  addrs,
				NodeName:   p.Spec.NodeName,
				Conditions: slicer.PodConditions(serving, terminating, svc.Spec.PublishNotReadyAddresses),
				TargetRef:  slicer.ObjectRef{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)},
			}
			if node != nil {
				e.Zone = node.Labels[corev1.LabelTopologyZone]
			}
			if s.Headless && p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name && p.Namespace == svc.Namespace {
				e.Hostname = p.Spec.Hostname
			}
			k := key{at, portsKey(ports)}
			g, ok := index[k]
			if !ok {
				g = len(groups)
				index[k] = g
				groups = append(groups, slicer.Group{AddressType: at, Ports: ports})
			}
			groups[g].Endpoints = append(groups[g].Endpoints, e)
		}
	}
	return groups, skipped, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func addresses(p *corev1.Pod, at slicer.AddressType) ([]string, error) {
	var out []string
	for i, ip := range p.Status.PodIPs {
		a, err := netip.ParseAddr(ip.IP)
		if err != nil {
			return nil, fmt.Errorf("Pod %q: status.podIPs[%d]: %q is not an IP address", p.Name, i, ip.IP)
		}
		a = a.Unmap()
		if (a.Is6() && at == slicer.IPv6) || (a.Is4() && at == slicer.IPv4) {
			out = append(out, a.String())
		}
	}
	return out, nil
}

func podPorts(svc *corev1.Service, p *corev1.Pod) []slicer.Port {
	var out []slicer.Port
	for _, sp := range svc.Spec.Ports {
		proto := string(sp.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		var num int32
		switch {
		case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal == 0:
			num = sp.Port
		case sp.TargetPort.Type == intstr.Int:
			num = sp.TargetPort.IntVal
		default:
			for _, c := range p.Spec.Containers {
				for _, cp := range c.Ports {
					cproto := string(cp.Protocol)
					if cproto == "" {
						cproto = "TCP"
					}
					if cp.Name == sp.TargetPort.StrVal && cproto == proto {
						num = cp.ContainerPort
					}
				}
			}
			if num == 0 {
				continue
			}
		}
		port := slicer.Port{Name: sp.Name, Port: num, Protocol: proto}
		if sp.AppProtocol != nil {
			port.AppProtocol = *sp.AppProtocol
		}
		out = append(out, port)
	}
	return out
}

func portsKey(ps []slicer.Port) string {
	keys := make([]string, len(ps))
	for i, p := range ps {
		keys[i] = fmt.Sprintf("%s/%d/%s/%s", p.Name, p.Port, p.Protocol, p.AppProtocol)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}
