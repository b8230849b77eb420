package adapter

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/fairslice/fairslice/slicer"
)

func lister(names ...string) corelisters.NodeLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range names {
		_ = idx.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return corelisters.NewNodeLister(idx)
}

func TestDesiredPodRules(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"},
		Spec: corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, Ports: []corev1.ServicePort{
			{Name: "a", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("side")},
		}}}
	pod := func(name string, ips ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		if len(ips) > 0 {
			p.Status.PodIP = ips[0]
		}
		return p
	}
	sidecar := pod("sidecar", "010.000.000.001", "1234::5678:0000:0000:9abc:def0")
	sidecar.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: &always,
		Ports: []corev1.ContainerPort{{Name: "side", ContainerPort: 9000, Protocol: corev1.ProtocolTCP}}}}
	sidecar.Spec.Hostname, sidecar.Spec.Subdomain = "h", "svc"
	failed := pod("failed", "10.0.0.9")
	failed.Status.Phase = corev1.PodFailed
	noIP := pod("no-ip")
	lost := pod("lost", "10.0.0.7")
	lost.Spec.NodeName = "gone"
	bad := pod("bad", "1.2.3.256")

	var c Converter
	groups, err := c.Desired(svc, []*corev1.Pod{sidecar, failed, noIP, lost, bad}, lister("n1"))
	if err == nil || !strings.Contains(err.Error(), `node "gone" not found`) || !strings.Contains(err.Error(), `"1.2.3.256" is not an IP address`) {
		t.Errorf("Desired error = %v, want the missing node and the bad IP", err)
	}
	var v4, v6 []slicer.Endpoint
	for _, g := range groups {
		if len(g.Ports) == 1 && g.Ports[0].Port == 9000 {
			if g.AddressType == slicer.IPv4 {
				v4 = g.Endpoints
			} else {
				v6 = g.Endpoints
			}
		}
	}
	if len(v4) != 1 || v4[0].Addresses[0] != "10.0.0.1" || v4[0].Hostname != "h" || v4[0].Conditions.Ready != slicer.False {
		t.Errorf("IPv4 endpoints = %+v, want the sidecar pod with 10.0.0.1, hostname h, not ready", v4)
	}
	if len(v6) != 1 || v6[0].Addresses[0] != "1234::5678:0:0:9abc:def0" {
		t.Errorf("IPv6 endpoints = %+v, want the canonical address", v6)
	}
	// The pods without the named port (bad, lost) form a group with no
	// ports: still desired, upstream style.
	found := false
	for _, g := range groups {
		found = found || len(g.Ports) == 0
	}
	if !found {
		t.Errorf("groups %+v lack the empty port set of pods without the named port", groups)
	}
}

// A dual-stack pod with an IP that does not parse is reported once, not
// once per address type, and keeps its endpoints of both types.
func TestDesiredReportsBadIPOncePerPod(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"},
		Spec: corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, Ports: []corev1.ServicePort{
			{Name: "a", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
		}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "bad"}, {IP: "fd00::1"}}}}
	var c Converter
	groups, err := c.Desired(svc, []*corev1.Pod{pod}, lister("n1"))
	var skipped *SkippedPodsError
	if !errors.As(err, &skipped) || len(skipped.Errs) != 1 {
		t.Fatalf("Desired error = %v, want a *SkippedPodsError with 1 problem", err)
	}
	var got []string
	for _, g := range groups {
		for _, e := range g.Endpoints {
			got = append(got, string(g.AddressType)+" "+strings.Join(e.Addresses, ","))
		}
	}
	want := []string{"IPv4 10.0.0.1", "IPv6 fd00::1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Desired endpoints (-want +got):\n%s", diff)
	}
}
