package adapter

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fairslice/fairslice/slicer"
)

// TestCanonicalIPv4: the check without parsing accepts exactly the
// strings netip parses as IPv4 and prints back unchanged.
func TestCanonicalIPv4(t *testing.T) {
	cases := []string{
		"", "0.0.0.0", "255.255.255.255", "10.0.0.1", "1.2.3.4", "01.2.3.4", "1.2.3.04", "1.2.3.0",
		"256.1.1.1", "1.2.3.256", "1.2.3", "1.2.3.4.5", "1..2.3", ".1.2.3", "1.2.3.", "1.2.3.4 ", "a.b.c.d",
		"1.2.3.-4", "1000.2.3.4", "::1", "::ffff:1.2.3.4", "1.2.3.4%eth0", "99.999.9.9", "100.200.250.255",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "0123456789.:a%"
	for range 20000 {
		b := make([]byte, rng.IntN(17))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for range 2000 {
		cases = append(cases, fmt.Sprintf("%d.%d.%d.%d", rng.IntN(300), rng.IntN(300), rng.IntN(300), rng.IntN(300)))
	}
	for _, s := range cases {
		a, err := netip.ParseAddr(s)
		want := err == nil && a.Is4() && a.String() == s
		if got := canonicalIPv4(s); got != want {
			t.Errorf("canonicalIPv4(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestNodeTable: every node put, found or not, is got by its name, also
// among names that differ only in the middle and names of every length up
// to and past a few words; no other name is.
func TestNodeTable(t *testing.T) {
	var tab nodeTable
	if got := tab.get("n1"); got != nil {
		t.Fatalf("empty table got %+v for n1", got)
	}
	names := []string{"", "a", "node-1", "node-12", "node-123", "ip-10-0-0-0", "x"}
	for i := range 500 {
		names = append(names, fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/50, i%50))
	}
	for n := 1; n < 40; n++ {
		names = append(names, strings.Repeat("z", n)+"1")
	}
	memo := func(j int) nodeMemo {
		if j%4 == 0 {
			return nodeMemo{} // not found
		}
		return nodeMemo{found: true, zone: fmt.Sprintf("z%d", j%3), name: names[j]}
	}
	for i, n := range names {
		if got := tab.put(n, memo(i)); *got != memo(i) {
			t.Fatalf("put(%q) returned %+v, want %+v", n, *got, memo(i))
		}
		for j, m := range names[:i+1] {
			if got := tab.get(m); got == nil || *got != memo(j) {
				t.Fatalf("after %d puts, get(%q) = %v, want %+v", i+1, m, got, memo(j))
			}
		}
	}
	for _, n := range []string{"b", "ip-10-0-10-0.ec2.internal", "ip-10-0-0-0.ec2.interna", "node-1234", strings.Repeat("z", 40)} {
		if got := tab.get(n); got != nil {
			t.Errorf("get(%q) = %+v, want none", n, *got)
		}
	}
	tab.reset()
	if got := tab.get(names[1]); got != nil {
		t.Error("reset table still gets a node")
	}
}

// TestDesiredPortSetsPerPod: pods that resolve a named target port to
// different numbers, or not at all, in any order, each get the port set
// they resolve to, on a new Converter and on a reused one.
func TestDesiredPortSetsPerPod(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, Ports: []corev1.ServicePort{
			{Name: "a", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
			{Name: "b", Port: 81, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("b")},
		}}}
	var pods []*corev1.Pod
	want := map[string][]slicer.Port{} // pod name -> its port set
	for i, port := range []int32{9000, 9000, 9001, 0, 9001, 9000, 0, 0, 9002} {
		name := fmt.Sprintf("p%d", i)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:   corev1.PodSpec{NodeName: fmt.Sprintf("n%d", i%2)},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: fmt.Sprintf("10.0.0.%d", i+1)}}}}
		ports := []slicer.Port{{Name: "a", Port: 8080, Protocol: "TCP"}}
		if port != 0 {
			p.Spec.Containers = []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "b", ContainerPort: port, Protocol: corev1.ProtocolTCP}}}}
			ports = append(ports, slicer.Port{Name: "b", Port: port, Protocol: "TCP"})
		}
		pods = append(pods, p)
		want[name] = ports
	}
	check := func(step string, groups []slicer.Group) {
		t.Helper()
		got := map[string][]slicer.Port{}
		for _, g := range groups {
			for _, e := range g.Endpoints {
				got[e.TargetRef.Name] = g.Ports
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: port sets per pod (-want +got):\n%s", step, d)
		}
	}
	nodes := lister("n0", "n1")
	var reused Converter
	for step := range 3 {
		var fresh Converter
		groups, err := fresh.Desired(svc, pods, nodes)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("step %d, new Converter", step), groups)
		if groups, err = reused.Desired(svc, pods, nodes); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("step %d, reused Converter", step), groups)
		pods = append(pods[1:], pods[0])
	}
}
