package adapter

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fairslice/fairslice/slicer"
)

// TestDesiredGroupsInPodOrder: Desired gives each address type's port sets
// in the order of the first pod with each, counting pods left out for a
// missing node and pods without an address of the type, as upstream fills
// its map of port sets. The slicer reconciles port sets in that order,
// which decides the slices a Service being deleted keeps (see
// slicer.Group). A second call with the pods in another order (the
// Converter's memory) follows the new order.
func TestDesiredGroupsInPodOrder(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{
			{Name: "p0", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")},
		}}}
	// pod returns a pod whose port "web" is port (none for 0).
	pod := func(name, node string, port int32, ips ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		c := corev1.Container{Name: "c"}
		if port != 0 {
			c.Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: port, Protocol: corev1.ProtocolTCP}}
		}
		p.Spec.Containers = []corev1.Container{c}
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		p.Status.PodIP = ips[0]
		return p
	}
	pods := []*corev1.Pod{
		pod("a", "n1", 9002, "10.0.0.1"),
		pod("lost", "gone", 0, "10.0.0.2"), // missing node: no endpoint, its port set placed
		pod("b", "n1", 9002, "10.0.0.3"),
		pod("v6", "n1", 9001, "fd00::4"), // no IPv4 address: its port set placed for IPv4 too
		pod("c", "n1", 9000, "10.0.0.5", "fd00::5"),
		pod("d", "n1", 9001, "10.0.0.6"),
	}
	reversed := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		reversed[len(pods)-1-i] = p
	}
	// Each group as "port:endpoints" (port 0: no ports), per address type.
	type order map[slicer.AddressType][]string
	var c Converter
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want order
	}{{
		name: "first call",
		pods: pods,
		want: order{
			slicer.IPv4: {"9002:2", "0:0", "9001:1", "9000:1"},
			slicer.IPv6: {"9002:0", "0:0", "9001:1", "9000:1"},
		},
	}, {
		name: "second call, pods reversed",
		pods: reversed,
		want: order{
			slicer.IPv4: {"9001:1", "9000:1", "9002:2", "0:0"},
			slicer.IPv6: {"9001:1", "9000:1", "9002:0", "0:0"},
		},
	}} {
		groups, err := c.Desired(svc, tc.pods, lister("n1"))
		if err == nil {
			t.Fatalf("%s: Desired error = nil, want the pod on the missing node", tc.name)
		}
		got := order{}
		for _, g := range groups {
			port := int32(0)
			if len(g.Ports) > 0 {
				port = g.Ports[0].Port
			}
			got[g.AddressType] = append(got[g.AddressType], fmt.Sprintf("%d:%d", port, len(g.Endpoints)))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: port sets per address type (-want +got):\n%s", tc.name, diff)
		}
	}
}
