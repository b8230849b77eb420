package topologycompare

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// addHintsCase is one input of TestDifferentialAddHints; it is saved as
// JSON when the implementations disagree.
type addHintsCase struct {
	Nodes     []*corev1.Node             `json:"nodes"`
	HadHints  bool                       `json:"hadHints"`
	ToCreate  []*discovery.EndpointSlice `json:"toCreate"`
	ToUpdate  []*discovery.EndpointSlice `json:"toUpdate"`
	Unchanged []*discovery.EndpointSlice `json:"unchanged"`
}

func (c *addHintsCase) clone() *addHintsCase {
	cp := func(in []*discovery.EndpointSlice) []*discovery.EndpointSlice {
		out := make([]*discovery.EndpointSlice, len(in))
		for i, s := range in {
			out[i] = s.DeepCopy()
		}
		return out
	}
	return &addHintsCase{Nodes: c.Nodes, HadHints: c.HadHints, ToCreate: cp(c.ToCreate), ToUpdate: cp(c.ToUpdate), Unchanged: cp(c.Unchanged)}
}

var cpuChoices = []string{"500m", "1", "2", "4", "8", "1500m", "3900m"}

// randomNodes draws 1-5 zones of 1-3 nodes, with occasional unready and
// control-plane nodes, and rarely a node without a zone or CPU.
func randomNodes(rng *rand.Rand) (nodes []*corev1.Node, zones []string) {
	nz := 2 + rng.IntN(4)
	if rng.IntN(25) == 0 {
		nz = 1
	}
	for z := range nz {
		zones = append(zones, fmt.Sprintf("zone-%c", 'a'+z))
	}
	equal := rng.IntN(3) == 0
	cpu := cpuChoices[rng.IntN(len(cpuChoices))]
	mk := func(name, zone, cpu string, ready bool, labels map[string]string) *corev1.Node {
		if labels == nil {
			labels = map[string]string{}
		}
		if zone != "" {
			labels[corev1.LabelTopologyZone] = zone
		}
		status := corev1.ConditionTrue
		if !ready {
			status = corev1.ConditionFalse
		}
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
			},
		}
	}
	for _, z := range zones {
		for i := range 1 + rng.IntN(3) {
			c := cpu
			if !equal {
				c = cpuChoices[rng.IntN(len(cpuChoices))]
			}
			nodes = append(nodes, mk(fmt.Sprintf("%s-node-%d", z, i), z, c, rng.IntN(12) != 0, nil))
		}
	}
	switch rng.IntN(30) {
	case 0:
		nodes = append(nodes, mk("no-zone", "", "1", true, nil))
	case 1:
		nodes = append(nodes, mk("no-cpu", zones[0], "0", true, nil))
	case 2, 3, 4:
		nodes = append(nodes, mk("cp", "zone-cp", "4", true, map[string]string{"node-role.kubernetes.io/control-plane": ""}))
	}
	return nodes, zones
}

// randomEndpoints draws endpoints over the zones with random skew, mostly
// ready, rarely without a zone or in a zone without counted nodes.
func randomEndpoints(rng *rand.Rand, zones []string) []discovery.Endpoint {
	var n int
	switch rng.IntN(3) {
	case 0:
		n = rng.IntN(16)
	case 1:
		n = 8 + rng.IntN(30)
	default:
		n = 20 + rng.IntN(80)
	}
	weights := make([]float64, len(zones))
	for i := range weights {
		weights[i] = 0.2 + rng.Float64()
	}
	zoneless := rng.IntN(15) == 0
	var eps []discovery.Endpoint
	for i := range n {
		x := rng.Float64() * sum(weights)
		z := 0
		for z < len(zones)-1 && x > weights[z] {
			x -= weights[z]
			z++
		}
		zone := zones[z]
		switch {
		case zoneless && rng.IntN(10) == 0:
			zone = ""
		case rng.IntN(40) == 0:
			zone = "zone-cp"
		}
		e := discovery.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", z, i/250, i%250+1)}}
		if zone != "" {
			e.Zone = &zone
		}
		switch r := rng.IntN(20); {
		case r < 17:
			e.Conditions.Ready = ptr(true)
		case r < 19:
			e.Conditions.Ready = ptr(false)
		}
		eps = append(eps, e)
	}
	return eps
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// randomHints gives a slice's endpoints hints as an earlier sync may have
// left them: none, all same-zone, or a mix with cross-zone, missing,
// unknown-zone, multi-zone and empty hints.
func randomHints(rng *rand.Rand, s *discovery.EndpointSlice, zones []string) {
	mode := rng.IntN(10)
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		own := ""
		if e.Zone != nil {
			own = *e.Zone
		}
		hint := func(names ...string) *discovery.EndpointHints {
			h := &discovery.EndpointHints{ForZones: []discovery.ForZone{}}
			for _, n := range names {
				h.ForZones = append(h.ForZones, discovery.ForZone{Name: n})
			}
			return h
		}
		switch {
		case mode < 3:
			e.Hints = nil
		case mode < 7:
			e.Hints = hint(own)
		default:
			switch r := rng.IntN(30); {
			case r < 20:
				e.Hints = hint(own)
			case r < 25:
				e.Hints = hint(zones[rng.IntN(len(zones))])
			case r < 26:
				e.Hints = nil
			case r < 27:
				e.Hints = hint("zone-gone")
			case r < 28:
				e.Hints = hint(zones[0], zones[len(zones)-1])
			case r < 29:
				e.Hints = hint()
			default:
				e.Hints = &discovery.EndpointHints{ForNodes: []discovery.ForNode{{Name: "n"}}}
			}
		}
	}
}

// randomAddHintsCase draws a cluster and a plan over it.
func randomAddHintsCase(rng *rand.Rand) *addHintsCase {
	nodes, zones := randomNodes(rng)
	eps := randomEndpoints(rng, zones)
	rng.Shuffle(len(eps), func(i, j int) { eps[i], eps[j] = eps[j], eps[i] })
	c := &addHintsCase{Nodes: nodes, HadHints: rng.IntN(2) == 0}
	fresh := rng.IntN(4) == 0 // only slices to create
	maxLen := 1 + rng.IntN(max(1, len(eps)/2+1))
	for k := 0; len(eps) > 0; k++ {
		n := min(len(eps), 1+rng.IntN(maxLen))
		s := &discovery.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: fmt.Sprintf("slice-%02d", k)},
			AddressType: discovery.AddressTypeIPv4,
			Endpoints:   eps[:n:n],
		}
		eps = eps[n:]
		switch r := rng.IntN(3); {
		case fresh || r == 0:
			c.ToCreate = append(c.ToCreate, s)
		case r == 1:
			if rng.IntN(2) == 0 {
				randomHints(rng, s, zones)
			}
			c.ToUpdate = append(c.ToUpdate, s)
		default:
			randomHints(rng, s, zones)
			c.Unchanged = append(c.Unchanged, s)
		}
	}
	return c
}
