package slicer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// source draws small integers; rapid and the fuzzer's bytes both provide
// one, so that one scenario generator serves both.
type source interface{ intn(n int) int }

type rapidSource struct{ t *rapid.T }

func (s rapidSource) intn(n int) int { return rapid.IntRange(0, n-1).Draw(s.t, "n") }

type byteSource struct {
	data []byte
	pos  int
}

func (s *byteSource) intn(n int) int {
	if s.pos >= len(s.data) {
		return 0
	}
	b := int(s.data[s.pos])
	s.pos++
	return b % n
}

// scenario is one reconciliation input.
type scenario struct {
	svc      Service
	desired  []Group
	existing []Slice
	opts     Options
}

var portSets = [][]Port{
	{{Name: "http", Port: 80, Protocol: "TCP"}},
	{{Name: "http", Port: 81, Protocol: "TCP"}},
	{{Name: "a", Port: 1, Protocol: "UDP"}, {Name: "b", Port: 2, Protocol: "TCP"}},
	{},
}

// genScenario draws services with one or two address types, one or two
// port sets, desired endpoints with random attributes, and existing slices
// holding random mixes of desired (possibly changed) and stale endpoints,
// some foreign, some of other port sets or address types, with random
// labels and hints.
func genScenario(src source) scenario {
	sc := scenario{opts: Options{MaxEndpointsPerSlice: 1 + src.intn(8)}}
	sc.svc = Service{Namespace: "ns", Name: "svc", UID: "uid", Headless: src.intn(2) == 0, Deleting: src.intn(10) == 0,
		TopologyHints: src.intn(5) == 0}
	if src.intn(2) == 0 {
		sc.svc.Labels = map[string]string{"app": "x"}
	}
	types := [][]AddressType{{IPv4}, {IPv6}, {IPv4, IPv6}}[src.intn(3)]
	sc.svc.AddressTypes = types
	ep := func(at AddressType, id int) Endpoint {
		addr := fmt.Sprintf("10.0.0.%d", id)
		if at == IPv6 {
			addr = fmt.Sprintf("fd00::%x", id)
		}
		e := Endpoint{Addresses: []string{addr}, NodeName: fmt.Sprintf("n%d", src.intn(3)),
			Conditions: PodConditions(src.intn(3) > 0, src.intn(6) == 0, false),
			TargetRef:  ObjectRef{Kind: "Pod", Namespace: "ns", Name: fmt.Sprintf("p%d", id)}}
		if src.intn(4) == 0 {
			e.Zone = "z"
		}
		if src.intn(8) == 0 {
			e.Addresses = append(e.Addresses, addr+"0")
		}
		return e
	}
	for _, at := range types {
		for p := range 1 + src.intn(2) {
			g := Group{AddressType: at, Ports: portSets[(p+src.intn(2))%len(portSets)]}
			if len(sc.desired) > 0 && slicesEqualPorts(sc.desired[len(sc.desired)-1].Ports, g.Ports) {
				continue
			}
			n := src.intn(20)
			for i := range n {
				g.Endpoints = append(g.Endpoints, ep(at, 100*p+i))
			}
			sc.desired = append(sc.desired, g)
		}
	}
	for i := range src.intn(8) {
		at := types[src.intn(len(types))]
		if src.intn(10) == 0 {
			at = "IP"
		}
		s := Slice{Name: fmt.Sprintf("s%02d", i), Namespace: "ns", AddressType: at, Ports: portSets[src.intn(len(portSets))],
			Owners: []OwnerRef{{APIVersion: "v1", Kind: "Service", Name: "svc", UID: "uid"}},
			Labels: SliceLabels(&sc.svc, DefaultControllerName)}
		if src.intn(8) == 0 {
			s.Owners[0].UID = "other"
		}
		if src.intn(6) == 0 {
			s.Labels = map[string]string{"stale": "x"}
		}
		for range src.intn(sc.opts.MaxEndpointsPerSlice + 1) {
			var e Endpoint
			if len(sc.desired) > 0 && src.intn(4) > 0 {
				g := sc.desired[src.intn(len(sc.desired))]
				if len(g.Endpoints) == 0 {
					continue
				}
				e = g.Endpoints[src.intn(len(g.Endpoints))]
				if src.intn(4) == 0 {
					e.Conditions.Serving = Unset
				}
			} else {
				e = ep(at, 500+src.intn(50))
			}
			if src.intn(5) == 0 {
				e.Hints = &Hints{ForZones: []string{"z"}}
			}
			s.Endpoints = append(s.Endpoints, e)
		}
		sc.existing = append(sc.existing, s)
	}
	return sc
}

func slicesEqualPorts(a, b []Port) bool {
	var scratch []Port
	sorted := append([]Port(nil), b...)
	slices.SortFunc(sorted, comparePorts)
	return samePortSet(a, sorted, &scratch)
}

// checkPlan verifies the invariants of a plan: after it is applied, every
// desired endpoint is in exactly one slice of its address type and port
// set, in its desired version, and nothing else is; written slices hold at
// most the maximum; only a lone placeholder is empty (or a slice that was empty
// already, which upstream also leaves); deletes and updates
// name existing slices; unsupported address types are gone.
func checkPlan(sc scenario, p Plan) error {
	max := sc.opts.MaxEndpointsPerSlice
	if max == 0 {
		max = DefaultMaxEndpointsPerSlice
	}
	names := map[string]bool{}
	for _, s := range sc.existing {
		names[s.Name] = true
	}
	final := map[string]Slice{}
	byName := map[string]Slice{}
	for _, s := range sc.existing {
		final[s.Name] = s
		byName[s.Name] = s
	}
	for _, s := range p.Deletes {
		if !names[s.Name] {
			return fmt.Errorf("delete of unknown slice %q", s.Name)
		}
		delete(final, s.Name)
	}
	for _, s := range p.Updates {
		if !names[s.Name] {
			return fmt.Errorf("update of unknown slice %q", s.Name)
		}
		final[s.Name] = s
	}
	for i, s := range p.Creates {
		if s.Name != "" {
			return fmt.Errorf("create %d has a name", i)
		}
		final[fmt.Sprintf("new-%d", i)] = s
	}
	for _, s := range append(append([]Slice(nil), p.Creates...), p.Updates...) {
		if len(s.Endpoints) > max {
			return fmt.Errorf("written slice %q holds %d endpoints, max %d", s.Name, len(s.Endpoints), max)
		}
		if !sc.svc.TopologyHints && hasHints(s.Endpoints) {
			return fmt.Errorf("written slice %q keeps hints", s.Name)
		}
	}
	if sc.svc.Deleting && len(p.Creates) > 0 {
		return fmt.Errorf("%d creates for a Service being deleted", len(p.Creates))
	}
	// Expected content per (address type, port set).
	type key struct {
		at    AddressType
		group int
	}
	want := map[key]map[string]Endpoint{}
	groupOf := func(at AddressType, ports []Port) int {
		for i, g := range sc.desired {
			if g.AddressType == at && slicesEqualPorts(ports, g.Ports) {
				return i
			}
		}
		return -1
	}
	for i, g := range sc.desired {
		k := key{g.AddressType, groupOf(g.AddressType, g.Ports)}
		if want[k] == nil {
			want[k] = map[string]Endpoint{}
		}
		_ = i
		for _, e := range g.Endpoints {
			want[k][identityString(&e)] = e
		}
	}
	got := map[key]map[string]int{}
	empty := map[AddressType]int{}
	perType := map[AddressType]int{}
	for name, s := range final {
		perType[s.AddressType]++
		if !containsType(sc.svc.AddressTypes, s.AddressType) {
			return fmt.Errorf("slice %q of unsupported type %s survives", name, s.AddressType)
		}
		if len(s.Endpoints) == 0 {
			if old, ok := byName[name]; ok && len(old.Endpoints) == 0 {
				continue // an existing empty slice stays empty, as upstream (even when its labels are rewritten)
			}
			empty[s.AddressType]++
			if len(s.Ports) != 0 {
				return fmt.Errorf("empty slice %q is not a placeholder (ports %v)", name, s.Ports)
			}
			continue
		}
		k := key{s.AddressType, groupOf(s.AddressType, s.Ports)}
		if k.group < 0 {
			return fmt.Errorf("slice %q has undesired ports %v", name, s.Ports)
		}
		if got[k] == nil {
			got[k] = map[string]int{}
		}
		for _, e := range s.Endpoints {
			id := identityString(&e)
			w, ok := want[k][id]
			if !ok {
				return fmt.Errorf("slice %q holds undesired endpoint %s", name, id)
			}
			if !equalBeyondIdentity(&w, &e) {
				return fmt.Errorf("slice %q holds a stale version of %s", name, id)
			}
			got[k][id]++
		}
	}
	for k, eps := range want {
		for id := range eps {
			if got[k][id] != 1 && !sc.svc.Deleting {
				return fmt.Errorf("endpoint %s of %s group %d appears %d times", id, k.at, k.group, got[k][id])
			}
		}
	}
	for at, n := range empty {
		if n > 1 || perType[at] > 1 {
			return fmt.Errorf("%s: %d empty slices among %d", at, n, perType[at])
		}
	}
	return nil
}

func containsType(ts []AddressType, t AddressType) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func TestInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(rapidSource{t})
		p, err := Reconcile(sc.svc, sc.desired, sc.existing, sc.opts)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if err := checkPlan(sc, p); err != nil {
			t.Fatal(err)
		}
		// Deterministic, and independent of the order of the existing
		// slices.
		shuffled := append([]Slice(nil), sc.existing...)
		rng := rand.New(rand.NewPCG(uint64(len(shuffled)), 1))
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		p2, err := Reconcile(sc.svc, sc.desired, shuffled, sc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(p, p2); diff != "" {
			t.Fatalf("plan depends on the order of existing slices (-first +second):\n%s", diff)
		}
		// Compaction keeps the invariants, never writes more, and never
		// leaves more slices.
		compact := sc
		compact.opts.Compact = true
		pc, err := Reconcile(sc.svc, sc.desired, sc.existing, compact.opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkPlan(compact, pc); err != nil {
			t.Fatalf("compaction: %v", err)
		}
		if pc.Writes() > p.Writes() || finalCount(sc, pc) > finalCount(sc, p) {
			t.Fatalf("compaction: %d writes and %d slices, upstream policy %d and %d",
				pc.Writes(), finalCount(sc, pc), p.Writes(), finalCount(sc, p))
		}
	})
}

func FuzzReconcile(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 2, 0, 7, 9, 1, 4, 4, 4, 2, 2, 8, 1, 0, 5, 6, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := genScenario(&byteSource{data: data})
		p, err := Reconcile(sc.svc, sc.desired, sc.existing, sc.opts)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if err := checkPlan(sc, p); err != nil {
			t.Fatal(err)
		}
	})
}

// finalCount is the number of slices after p is applied.
func finalCount(sc scenario, p Plan) int {
	return len(sc.existing) - len(p.Deletes) + len(p.Creates)
}
