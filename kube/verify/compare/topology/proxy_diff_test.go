package topologycompare

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/topology"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	kproxy "k8s.io/kubernetes/pkg/proxy"
)

var (
	proxyCases  = flag.Int("diff.proxycases", 3000, "random endpoint sets in TestDifferentialSelectEndpoints (half with PreferSameTrafficDistribution on, half off)")
	proxyReplay = flag.String("diff.proxyreplay", "", "glob of saved SelectEndpoints cases to replay (TestDifferentialSelectEndpointsReplay)")
)

// proxyCase is one input of TestDifferentialSelectEndpoints: what one
// node's kube-proxy sees. It is saved as JSON when the implementations
// disagree.
type proxyCase struct {
	Service    *corev1.Service            `json:"service"`
	Slices     []*discovery.EndpointSlice `json:"slices"`
	NodeName   string                     `json:"nodeName"`
	NodeLabels map[string]string          `json:"nodeLabels"`
	// PreferSame is the PreferSameTrafficDistribution feature gate; off
	// means emulating Kubernetes 1.34.
	PreferSame bool `json:"preferSame"`
}

// proxyObservation is what must match. Endpoints are listed by address,
// sorted: upstream lists them in its cache's order (and the merged list in
// map order), fairslice in input order.
type proxyObservation struct {
	// ClusterNil: no cluster set at all (the port uses only Local
	// endpoints, or the Service has no endpoints), as against an empty one.
	ClusterNil bool
	Cluster    []string
	// Local compares nil and empty alike: upstream returns nil when the
	// node has no usable local endpoint, fairslice an empty list
	// (documented on Selection.Local).
	Local     []string
	Reachable []string
	HasAny    bool
	// ClusterTerminating and LocalTerminating: the set is made of
	// serving-and-terminating endpoints because none was ready.
	ClusterTerminating, LocalTerminating bool
}

func upstreamIPs(eps []kproxy.Endpoint) []string {
	out := []string{}
	for _, e := range eps {
		out = append(out, e.IP())
	}
	slices.Sort(out)
	return out
}

var silenceKlog sync.Once

// upstreamPort is the Service port as kube-proxy's ServiceChangeTracker
// builds it.
func upstreamPort(svc *corev1.Service) (kproxy.ServicePort, error) {
	sct := kproxy.NewServiceChangeTracker(corev1.IPv4Protocol, nil, nil)
	sct.Update(nil, svc)
	sm := kproxy.ServicePortMap{}
	sm.Update(sct)
	p := svc.Spec.Ports[0]
	sp, ok := sm[kproxy.ServicePortName{NamespacedName: types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, Port: p.Name, Protocol: p.Protocol}]
	if !ok {
		return nil, fmt.Errorf("kube-proxy made no service port of %s/%s %s", svc.Namespace, svc.Name, p.Name)
	}
	return sp, nil
}

// runUpstreamProxy feeds the slices through kube-proxy's
// EndpointsChangeTracker (which reads conditions and hints, drops
// endpoints without addresses and marks local ones) and calls
// CategorizeEndpoints.
// localNonNil reports whether the Local list was non-nil.
func runUpstreamProxy(c *proxyCase) (obs proxyObservation, localNonNil bool, err error) {
	silenceKlog.Do(func() { klog.SetLogger(logr.Discard()) })
	sp, err := upstreamPort(c.Service)
	if err != nil {
		return proxyObservation{}, false, err
	}
	ect := kproxy.NewEndpointsChangeTracker(corev1.IPv4Protocol, c.NodeName, nil, nil)
	for _, s := range c.Slices {
		ect.EndpointSliceUpdate(s, false)
	}
	em := kproxy.EndpointsMap{}
	em.Update(ect)
	p := c.Service.Spec.Ports[0]
	eps := em[kproxy.ServicePortName{NamespacedName: types.NamespacedName{Namespace: c.Service.Namespace, Name: c.Service.Name}, Port: p.Name, Protocol: p.Protocol}]
	cluster, local, all, hasAny := kproxy.CategorizeEndpoints(eps, sp, c.NodeName, c.NodeLabels)
	return proxyObservation{
		ClusterNil:         cluster == nil,
		Cluster:            upstreamIPs(cluster),
		Local:              upstreamIPs(local),
		Reachable:          upstreamIPs(all),
		HasAny:             hasAny,
		ClusterTerminating: len(cluster) > 0 && !cluster[0].IsReady(),
		LocalTerminating:   len(local) > 0 && !local[0].IsReady(),
	}, local != nil, nil
}

// ourPolicy reads the port's traffic policy from kube-proxy's own
// ServicePort, which decides what "externally accessible" means (a node
// port, a VIP-mode load-balancer IP or an external IP of the family).
func ourPolicy(c *proxyCase) (topology.TrafficPolicy, error) {
	sp, err := upstreamPort(c.Service)
	if err != nil {
		return topology.TrafficPolicy{}, err
	}
	return topology.TrafficPolicy{
		InternalLocal:   sp.InternalPolicyLocal(),
		ExternalLocal:   sp.ExternalPolicyLocal(),
		External:        sp.ExternallyAccessible(),
		IgnoreNodeHints: !c.PreferSame,
	}, nil
}

func runOursProxy(c *proxyCase) (proxyObservation, topology.Selection, error) {
	p, err := ourPolicy(c)
	if err != nil {
		return proxyObservation{}, topology.Selection{}, err
	}
	var eps []topology.Endpoint
	for _, s := range c.Slices {
		for i := range s.Endpoints {
			eps = append(eps, adapter.EndpointFromAPI(&s.Endpoints[i]))
		}
	}
	sel := topology.SelectEndpoints(eps, p, c.NodeName, c.NodeLabels[corev1.LabelTopologyZone])
	ips := func(idx []int) []string {
		out := []string{}
		for _, i := range idx {
			out = append(out, eps[i].Addresses[0])
		}
		slices.Sort(out)
		return out
	}
	return proxyObservation{
		ClusterNil:         sel.Cluster == nil,
		Cluster:            ips(sel.Cluster),
		Local:              ips(sel.Local),
		Reachable:          ips(sel.Reachable),
		HasAny:             sel.HasAny,
		ClusterTerminating: sel.ClusterTerminating,
		LocalTerminating:   sel.LocalTerminating,
	}, sel, nil
}

// compareProxyCase returns "" when both agree, else the cmp.Diff
// (-upstream +fairslice) or an error.
func compareProxyCase(c *proxyCase) (string, topology.Selection) {
	up, upLocal, err := runUpstreamProxy(c)
	if err != nil {
		return err.Error(), topology.Selection{}
	}
	ours, sel, err := runOursProxy(c)
	if err != nil {
		return err.Error(), sel
	}
	var extra string
	if len(sel.Reachable) != len(ours.Reachable) || len(slices.Compact(slices.Clone(ours.Reachable))) != len(ours.Reachable) {
		extra = fmt.Sprintf("fairslice's Reachable lists an endpoint twice: %v\n", ours.Reachable)
	}
	if upLocal && sel.Local == nil {
		extra += "kube-proxy has a Local list, fairslice's Local is nil\n"
	}
	return extra + cmp.Diff(up, ours), sel
}

// setPreferSame sets the PreferSameTrafficDistribution gate for t (off
// needs emulating 1.34: the gate is locked on since 1.35).
func setPreferSame(t *testing.T, on bool) {
	if !on {
		featuregatetesting.SetFeatureGateEmulationVersionDuringTest(t, utilfeature.DefaultFeatureGate, version.MustParse("1.34"))
	}
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.PreferSameTrafficDistribution, on)
}

var (
	proxyNodes = []string{"node-0", "node-1", "node-2", "node-3"}
	proxyZones = []string{"zone-a", "zone-b", "zone-c"}
)

// tri draws an unset, true or false condition.
func tri(rng *rand.Rand) *bool {
	switch rng.IntN(3) {
	case 0:
		return nil
	case 1:
		return ptr(true)
	}
	return ptr(false)
}

// pickNames draws 1-2 names, rarely "" (a hint naming a zone or node "").
func pickNames(rng *rand.Rand, from []string) []string {
	n := 1 + rng.IntN(2)
	var out []string
	for range n {
		if rng.IntN(30) == 0 {
			out = append(out, "")
		} else {
			out = append(out, from[rng.IntN(len(from))])
		}
	}
	return out
}

// randomProxyService draws a Service whose single port is internal only
// or external (node port, load balancer with or without node ports and
// VIP, external IPs of either family), with random traffic policies.
func randomProxyService(rng *rand.Rand) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"},
		Spec: corev1.ServiceSpec{
			Type:       corev1.ServiceTypeClusterIP,
			ClusterIP:  "172.30.0.10",
			ClusterIPs: []string{"172.30.0.10"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	switch rng.IntN(8) {
	case 0, 1, 2:
	case 3:
		svc.Spec.ExternalIPs = []string{"192.0.2.10"}
	case 4:
		// Only an IPv6 external IP: not external for an IPv4 proxy.
		svc.Spec.ExternalIPs = []string{"2001:db8::10"}
	case 5:
		svc.Spec.Type = corev1.ServiceTypeNodePort
		svc.Spec.Ports[0].NodePort = 30080
	case 6:
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		svc.Spec.Ports[0].NodePort = 30080
	default:
		// A load balancer without node ports: external only with a
		// VIP-mode ingress IP.
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		svc.Spec.AllocateLoadBalancerNodePorts = ptr(false)
		switch rng.IntN(3) {
		case 0:
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}
		case 1:
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7", IPMode: ptr(corev1.LoadBalancerIPModeProxy)}}
		}
	}
	switch rng.IntN(3) {
	case 1:
		svc.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyCluster)
	case 2:
		svc.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal)
	}
	if rng.IntN(2) == 0 {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			svc.Spec.HealthCheckNodePort = 30100
		}
	} else if rng.IntN(2) == 0 {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	return svc
}

// randomProxyCase draws a Service, 0-10 endpoints over 1-3 slices and the
// node whose kube-proxy looks at them. Hints follow a per-case style so
// that the all-hinted cases that switch topology on are common: none,
// zone hints on every endpoint, node and zone hints on every endpoint, or
// a mix (missing, empty, several names, unknown or empty names).
func randomProxyCase(rng *rand.Rand, preferSame bool) *proxyCase {
	c := &proxyCase{Service: randomProxyService(rng), PreferSame: preferSame, NodeLabels: map[string]string{}}
	switch r := rng.IntN(20); {
	case r == 0:
		c.NodeName = ""
	case r == 1:
		c.NodeName = "node-elsewhere"
	default:
		c.NodeName = proxyNodes[rng.IntN(len(proxyNodes))]
	}
	switch r := rng.IntN(20); {
	case r == 0:
	case r == 1:
		c.NodeLabels[corev1.LabelTopologyZone] = ""
	case r == 2:
		c.NodeLabels[corev1.LabelTopologyZone] = "zone-elsewhere"
	default:
		c.NodeLabels[corev1.LabelTopologyZone] = proxyZones[rng.IntN(len(proxyZones))]
	}
	if rng.IntN(4) == 0 {
		c.NodeLabels["kubernetes.io/hostname"] = c.NodeName
	}
	n := rng.IntN(11)
	if rng.IntN(10) == 0 {
		n = 0
	}
	style := rng.IntN(4)
	var eps []discovery.Endpoint
	for i := range n {
		e := discovery.Endpoint{Addresses: []string{fmt.Sprintf("10.0.%d.%d", i/200, i%200+1)}}
		switch rng.IntN(25) {
		case 0:
			e.Addresses = nil
		case 1:
			e.Addresses = append(e.Addresses, fmt.Sprintf("10.9.0.%d", i+1))
		}
		e.Conditions = discovery.EndpointConditions{Ready: tri(rng), Serving: tri(rng), Terminating: tri(rng)}
		if rng.IntN(2) == 0 {
			// A consistent state is more common than random conditions.
			switch rng.IntN(4) {
			case 0, 1:
				e.Conditions = discovery.EndpointConditions{Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false)}
			case 2:
				e.Conditions = discovery.EndpointConditions{Ready: ptr(false), Serving: ptr(true), Terminating: ptr(true)}
			default:
				e.Conditions = discovery.EndpointConditions{Ready: ptr(false), Serving: ptr(false), Terminating: ptr(true)}
			}
		}
		node := proxyNodes[rng.IntN(len(proxyNodes))]
		switch rng.IntN(15) {
		case 0:
		case 1:
			e.NodeName = ptr("")
		default:
			e.NodeName = ptr(node)
		}
		zone := proxyZones[rng.IntN(len(proxyZones))]
		e.Zone = ptr(zone)
		forZones := func(names []string) []discovery.ForZone {
			var out []discovery.ForZone
			for _, z := range names {
				out = append(out, discovery.ForZone{Name: z})
			}
			return out
		}
		forNodes := func(names []string) []discovery.ForNode {
			var out []discovery.ForNode
			for _, x := range names {
				out = append(out, discovery.ForNode{Name: x})
			}
			return out
		}
		switch style {
		case 1:
			e.Hints = &discovery.EndpointHints{ForZones: []discovery.ForZone{{Name: zone}}}
			if rng.IntN(5) == 0 {
				e.Hints.ForZones = forZones(pickNames(rng, proxyZones))
			}
		case 2:
			e.Hints = &discovery.EndpointHints{ForZones: []discovery.ForZone{{Name: zone}}, ForNodes: []discovery.ForNode{{Name: node}}}
			if rng.IntN(5) == 0 {
				e.Hints.ForNodes = forNodes(pickNames(rng, proxyNodes))
			}
		case 3:
			switch rng.IntN(6) {
			case 0:
			case 1:
				e.Hints = &discovery.EndpointHints{}
			case 2:
				e.Hints = &discovery.EndpointHints{ForZones: forZones(pickNames(rng, proxyZones))}
			case 3:
				e.Hints = &discovery.EndpointHints{ForNodes: forNodes(pickNames(rng, proxyNodes))}
			default:
				e.Hints = &discovery.EndpointHints{ForZones: forZones(pickNames(rng, proxyZones)), ForNodes: forNodes(pickNames(rng, proxyNodes))}
			}
		}
		eps = append(eps, e)
	}
	ns := 1 + rng.IntN(3)
	for k := range ns {
		s := &discovery.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: fmt.Sprintf("svc-%d", k),
				Labels: map[string]string{discovery.LabelServiceName: "svc"},
			},
			AddressType: discovery.AddressTypeIPv4,
			Ports:       []discovery.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}},
		}
		c.Slices = append(c.Slices, s)
	}
	for _, e := range eps {
		s := c.Slices[rng.IntN(ns)]
		s.Endpoints = append(s.Endpoints, e)
	}
	return c
}

// proxyCoverage counts what the cases exercised, so that a generator that
// stops reaching a branch fails the test instead of passing vacuously.
type proxyCoverage map[string]int

func (cv proxyCoverage) add(c *proxyCase, sel topology.Selection) {
	p, _ := ourPolicy(c)
	usesCluster := !p.InternalLocal || p.External
	usesLocal := p.InternalLocal || (p.ExternalLocal && p.External)
	switch {
	case sel.Why == "no endpoints":
		cv["no endpoints"]++
	case !usesLocal:
		cv["cluster only"]++
	case !usesCluster:
		cv["local only"]++
	default:
		cv["cluster and local"]++
	}
	cv["mode "+sel.Mode]++
	if sel.ClusterTerminating {
		cv["cluster terminating fallback"]++
	}
	if sel.LocalTerminating {
		cv["local terminating fallback"]++
	}
	if len(sel.Local) > 0 {
		cv["local endpoints"]++
	}
	if !sel.HasAny && sel.Why != "no endpoints" {
		cv["endpoints but none usable"]++
	}
}

// TestDifferentialSelectEndpoints compares topology.SelectEndpoints with
// kube-proxy's CategorizeEndpoints (k8s.io/kubernetes v1.37.2) on random
// endpoint sets, with the PreferSameTrafficDistribution gate on and off.
func TestDifferentialSelectEndpoints(t *testing.T) {
	s := seed(t)
	n := *proxyCases
	if testing.Short() {
		n = min(n, 600)
	}
	for gi, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("PreferSameTrafficDistribution=%v", on), func(t *testing.T) {
			setPreferSame(t, on)
			rng := rand.New(rand.NewPCG(s, 0x9e0c5+uint64(gi)))
			cv := proxyCoverage{}
			failures := 0
			for i := range n / 2 {
				c := randomProxyCase(rng, on)
				diff, sel := compareProxyCase(c)
				if diff == "" {
					cv.add(c, sel)
					continue
				}
				failures++
				if failures <= 3 {
					t.Errorf("case %d (seed %d): kube-proxy and fairslice differ (-upstream +fairslice):\n%s\nwhy: %s", i, s, diff, sel.Why)
					save(t, fmt.Sprintf("proxy-%d-%v-%d.json", s, on, i), c)
				}
			}
			t.Logf("%d cases, %d mismatches", n/2, failures)
			keys := []string{"no endpoints", "cluster only", "local only", "cluster and local", "mode ", "mode PreferSameZone",
				"cluster terminating fallback", "local terminating fallback", "local endpoints", "endpoints but none usable"}
			if on {
				keys = append(keys, "mode PreferSameNode")
			} else if cv["mode PreferSameNode"] > 0 {
				t.Errorf("PreferSameNode chosen %d times with the gate off", cv["mode PreferSameNode"])
			}
			for _, k := range keys {
				t.Logf("  %5d  %s", cv[k], k)
				if n/2 >= 500 && cv[k] == 0 {
					t.Errorf("no case covered %q: the generator no longer reaches it", k)
				}
			}
		})
	}
}

// TestDifferentialSelectEndpointsReplay replays saved SelectEndpoints
// cases (-diff.proxyreplay GLOB; default testdata/proxy-*.json).
func TestDifferentialSelectEndpointsReplay(t *testing.T) {
	pattern := *proxyReplay
	if pattern == "" {
		pattern = "testdata/proxy-*.json"
	}
	forEachSaved(t, pattern, func(f string, b []byte) {
		var c proxyCase
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			setPreferSame(t, c.PreferSame)
			if diff, sel := compareProxyCase(&c); diff != "" {
				t.Errorf("%s: kube-proxy and fairslice differ (-upstream +fairslice):\n%s\nwhy: %s", f, diff, sel.Why)
			}
		})
	})
}
