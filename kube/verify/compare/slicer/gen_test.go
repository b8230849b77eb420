package slicercompare

import (
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/internal/upstream/slicerun"
	"github.com/fairslice/fairslice/slicer"
)

const (
	ns     = "ns"
	svcUID = "svc-uid"
)

// randomScenario builds one random reconciliation: a Service (random IP
// families, ports with numeric or named target ports, labels, headless,
// publishNotReadyAddresses), pods with random churn against an earlier
// generation, nodes (some missing), and existing slices of random fill
// built from the earlier generation, with random foreign owners, stale
// labels, hints, placeholders, deprecated address types and port sets.
func randomScenario(rng *rand.Rand) slicerun.Input {
	in := slicerun.Input{MaxEndpointsPerSlice: randomMax(rng)}
	if rng.IntN(4) == 0 {
		// Sub-second times too: the annotation keeps nanoseconds.
		in.TriggerTime = time.Date(2026, 12, 1, 0, 0, rng.IntN(60), rng.IntN(2)*rng.IntN(1e9), time.UTC)
	}
	for i := range 4 {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}
		if rng.IntN(3) > 0 {
			n.Labels = map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("zone-%c", 'a'+rune(i%3))}
		}
		in.Nodes = append(in.Nodes, n)
	}
	old := randomService(rng)
	in.Service = old.DeepCopy()
	if rng.IntN(4) == 0 {
		in.Service = randomService(rng) // ports, families or labels changed
	}
	in.Service.Spec.PublishNotReadyAddresses = rng.IntN(5) == 0
	if rng.IntN(30) == 0 {
		in.Service.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	}

	// Earlier and current generations of pods.
	maxPods := []int{0, 3, 20, 60, 150}[rng.IntN(5)]
	n := 0
	if maxPods > 0 {
		n = rng.IntN(maxPods + 1)
	}
	var oldPods []*corev1.Pod
	for i := range n {
		oldPods = append(oldPods, randomPod(rng, i))
	}
	churn := rng.Float64()
	for i, p := range oldPods {
		switch {
		case rng.Float64() < churn*0.3:
			continue // gone
		case rng.Float64() < churn*0.5:
			p = p.DeepCopy()
			mutatePod(rng, p)
		}
		in.Pods = append(in.Pods, p)
		_ = i
	}
	for i := n; i < n+rng.IntN(int(churn*float64(maxPods))+1); i++ {
		in.Pods = append(in.Pods, randomPod(rng, i))
	}
	in.Existing = existingSlices(rng, old, oldPods, in.Nodes, in.MaxEndpointsPerSlice)
	return in
}

func randomMax(rng *rand.Rand) int {
	switch rng.IntN(6) {
	case 0:
		return 1 + rng.IntN(3)
	case 1:
		return 1 + rng.IntN(10)
	case 2:
		return 1 + rng.IntN(1000)
	case 3:
		return 100
	default:
		return 1 + rng.IntN(40)
	}
}

func randomService(rng *rand.Rand) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "svc", UID: svcUID}}
	switch rng.IntN(6) {
	case 0:
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		s.Spec.ClusterIP = "10.0.0.1"
	case 1:
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
		s.Spec.ClusterIP = "fd00::1"
	case 2:
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	case 3:
		s.Spec.ClusterIP = corev1.ClusterIPNone // headless, both families
	case 4:
		s.Spec.ClusterIP = "10.0.0.1"
	default:
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	if !(s.Spec.ClusterIP == corev1.ClusterIPNone && rng.IntN(2) == 0) {
		for i := range 1 + rng.IntN(3) {
			p := corev1.ServicePort{Name: fmt.Sprintf("p%d", i), Port: int32(80 + i), Protocol: corev1.ProtocolTCP}
			if rng.IntN(3) == 0 {
				p.TargetPort = intstr.FromString(fmt.Sprintf("named%d", rng.IntN(2)))
			} else {
				p.TargetPort = intstr.FromInt32(int32(8080 + rng.IntN(2)))
			}
			if rng.IntN(5) == 0 {
				p.Protocol = corev1.ProtocolUDP
			}
			if rng.IntN(6) == 0 {
				p.AppProtocol = ptr("http")
			}
			s.Spec.Ports = append(s.Spec.Ports, p)
		}
	}
	switch rng.IntN(4) {
	case 0:
		s.Labels = map[string]string{"app": "a"}
	case 1:
		s.Labels = map[string]string{"app": "b", slicer.LabelManagedBy: "x"}
	}
	return s
}

func randomPod(rng *rand.Rand, i int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))}}
	p.Spec.NodeName = fmt.Sprintf("node-%d", rng.IntN(5)) // node-4 does not exist
	p.Status.Phase = corev1.PodRunning
	setIPs(rng, p, i)
	setReady(p, rng.IntN(4) > 0)
	if rng.IntN(4) == 0 {
		p.Spec.Hostname = fmt.Sprintf("h%d", i)
		p.Spec.Subdomain = []string{"svc", "other"}[rng.IntN(2)]
	}
	c := corev1.Container{Name: "c"}
	for k := range 2 {
		if rng.IntN(3) > 0 {
			c.Ports = append(c.Ports, corev1.ContainerPort{
				Name: fmt.Sprintf("named%d", k), ContainerPort: int32(9000 + rng.IntN(3)), Protocol: corev1.ProtocolTCP,
			})
		}
	}
	p.Spec.Containers = []corev1.Container{c}
	if rng.IntN(20) == 0 {
		p.Status.Phase = []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending}[rng.IntN(3)]
	}
	if rng.IntN(15) == 0 {
		p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	}
	return p
}

func setIPs(rng *rand.Rand, p *corev1.Pod, i int) {
	v4 := fmt.Sprintf("10.%d.%d.%d", rng.IntN(2), i/250, 1+i%250)
	v6 := fmt.Sprintf("fd00::%x", 1+i+rng.IntN(2)*0x1000)
	var ips []string
	switch rng.IntN(8) {
	case 0:
		ips = []string{v6}
	case 1, 2:
		ips = []string{v4, v6}
	case 3:
		if rng.IntN(3) == 0 {
			ips = nil // no IP yet
		} else {
			ips = []string{v6, v4}
		}
	default:
		ips = []string{v4}
	}
	p.Status.PodIP, p.Status.PodIPs = "", nil
	for _, ip := range ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(ips) > 0 {
		p.Status.PodIP = ips[0]
	}
}

func setReady(p *corev1.Pod, ready bool) {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
}

func mutatePod(rng *rand.Rand, p *corev1.Pod) {
	switch rng.IntN(6) {
	case 0:
		setReady(p, rng.IntN(2) == 0)
	case 1:
		setIPs(rng, p, rng.IntN(1000))
	case 2:
		p.Spec.NodeName = fmt.Sprintf("node-%d", rng.IntN(5))
	case 3:
		p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	case 4:
		p.UID = types.UID(fmt.Sprintf("uid-new-%d", rng.IntN(1000)))
	default:
		p.Spec.Hostname = fmt.Sprintf("h%d", rng.IntN(5))
		p.Spec.Subdomain = "svc"
	}
}

// existingSlices packs the endpoints of an earlier generation into slices
// of random fill (at most max each), then damages some of them.
func existingSlices(rng *rand.Rand, svc *corev1.Service, pods []*corev1.Pod, nodes []*corev1.Node, max int) []*discovery.EndpointSlice {
	var conv endpointslice.Converter
	groups, _ := conv.Desired(svc, pods, slicerun.NodeLister(nodes))
	facts := endpointslice.ServiceFacts(svc, time.Time{})
	var out []*discovery.EndpointSlice
	name := func() string { return fmt.Sprintf("svc-old%03d", len(out)) }
	for _, g := range groups {
		eps := g.Endpoints
		rng.Shuffle(len(eps), func(i, j int) { eps[i], eps[j] = eps[j], eps[i] })
		for len(eps) > 0 {
			k := 1 + rng.IntN(min(len(eps), max))
			s := slicer.Slice{
				Name: name(), Namespace: ns, AddressType: g.AddressType, Ports: g.Ports, Endpoints: eps[:k],
				Labels: slicer.SliceLabels(&facts, slicer.DefaultControllerName),
				Owners: []slicer.OwnerRef{{APIVersion: "v1", Kind: "Service", Name: "svc", UID: svcUID, Controller: true}},
			}
			eps = eps[k:]
			out = append(out, damage(rng, endpointslice.ToEndpointSlice(s)))
		}
	}
	if rng.IntN(8) == 0 { // an existing placeholder, maybe right
		at := facts.AddressTypes[rng.IntN(len(facts.AddressTypes))]
		s := slicer.Slice{
			Name: name(), Namespace: ns, AddressType: at, Ports: []slicer.Port{},
			Labels: slicer.SliceLabels(&facts, slicer.DefaultControllerName),
			Owners: []slicer.OwnerRef{{APIVersion: "v1", Kind: "Service", Name: "svc", UID: svcUID, Controller: true}},
		}
		out = append(out, damage(rng, endpointslice.ToEndpointSlice(s)))
	}
	if rng.IntN(10) == 0 && len(out) > 0 { // a deprecated or foreign address type
		s := out[rng.IntN(len(out))].DeepCopy()
		s.Name = name()
		s.AddressType = []discovery.AddressType{"IP", discovery.AddressTypeFQDN}[rng.IntN(2)]
		out = append(out, s)
	}
	return out
}

func damage(rng *rand.Rand, s *discovery.EndpointSlice) *discovery.EndpointSlice {
	switch rng.IntN(12) {
	case 0:
		s.OwnerReferences[0].UID = "someone-else"
	case 1:
		s.Labels["extra"] = "x"
	case 2:
		delete(s.Labels, slicer.LabelHeadless)
		delete(s.Labels, "app")
	case 3:
		for i := range s.Endpoints {
			if rng.IntN(2) == 0 {
				s.Endpoints[i].Hints = &discovery.EndpointHints{ForZones: []discovery.ForZone{{Name: "zone-a"}}}
			}
		}
	case 4:
		if len(s.Ports) > 1 {
			s.Ports[0], s.Ports[1] = s.Ports[1], s.Ports[0] // same set, other order
		}
	case 5:
		for i := range s.Endpoints {
			s.Endpoints[i].Conditions.Serving = nil
		}
	}
	return s
}

func ptr[T any](v T) *T { return &v }
