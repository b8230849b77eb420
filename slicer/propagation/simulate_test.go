package propagation

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fairslice/fairslice/slicer"
)

// TestRollingUpdateMatchesReconciler replays the rolling update through
// the real reconciler: every replacement must be exactly one update of the
// slice that held the old pod, and the bytes written must be those the
// simulation counts.
func TestRollingUpdateMatchesReconciler(t *testing.T) {
	const pods, nodes = 1000, 50
	r, err := Simulate(Config{Pods: pods, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	svc := service
	svc.AddressTypes = []slicer.AddressType{slicer.IPv4}
	svc.TriggerTime = created
	rec, err := slicer.NewReconciler(slicer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eps := make([]slicer.Endpoint, pods)
	for i := range eps {
		eps[i] = pod(0, i, nodes)
	}
	var existing []slicer.Slice
	for k := 0; k < pods; k += 100 {
		s := slice(slices.Clone(eps[k : k+100]))
		s.Name = fmt.Sprintf("web-%05d", k/100)
		existing = append(existing, s)
	}
	var written Size
	for i := range pods {
		eps[i] = pod(1, i, nodes)
		plan, err := rec.Reconcile(svc, []slicer.Group{{AddressType: slicer.IPv4, Ports: ports, Endpoints: eps}}, existing)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Updates) != 1 || plan.Writes() != 1 || len(plan.Updates[0].Endpoints) != 100 {
			t.Fatalf("step %d: %d creates, %d updates, %d deletes; want one update of a full slice",
				i, len(plan.Creates), len(plan.Updates), len(plan.Deletes))
		}
		u := plan.Updates[0]
		written = written.Add(EndpointSliceSize(u, stored))
		for j := range existing {
			if existing[j].Name == u.Name {
				existing[j] = u
			}
		}
	}
	if d := r.Designs[1]; written != d.RollingBytes || d.RollingWrites != pods {
		t.Errorf("reconciler wrote %+v in %d writes; Simulate says %+v in %d", written, pods, d.RollingBytes, d.RollingWrites)
	}
}

func TestKEPEstimates(t *testing.T) {
	// KEP-0752: P = 20,000, N = 5,000. Endpoints ~2 MB, 100 per slice
	// ~10 KB, 1 per slice < 1 KB; rolling update ~200 TB versus ~1 TB.
	r, err := Simulate(Config{Pods: 20000, Nodes: 5000})
	if err != nil {
		t.Fatal(err)
	}
	ep, s100, s1 := r.Designs[0], r.Designs[1], r.Designs[2]
	within := func(name string, got, lo, hi float64) {
		if got < lo || got > hi {
			t.Errorf("%s = %.4g, want within [%.4g, %.4g]", name, got, lo, hi)
		}
	}
	within("Endpoints object (protobuf)", float64(ep.ObjectSize.Protobuf), 1.5e6, 3e6)
	within("100-per-slice object", float64(s100.ObjectSize.Protobuf), 8e3, 20e3)
	within("1-per-slice object", float64(s1.ObjectSize.Protobuf), 100, 1000)
	epSent, _ := r.Sent(ep.RollingBytes)
	s100Sent, _ := r.Sent(s100.RollingBytes)
	within("Endpoints rolling update bytes sent", epSent, 150e12, 300e12)
	within("100-per-slice rolling update bytes sent", s100Sent, 0.7e12, 2e12)
	if s100.CreateWrites != 200 || s1.CreateWrites != 20000 || ep.RollingWrites != 20000 {
		t.Errorf("writes: create %d and %d, rolling %d; want 200, 20000, 20000", s100.CreateWrites, s1.CreateWrites, ep.RollingWrites)
	}
	// The protobuf Endpoints object passes 1.5 MiB between 10k and 20k
	// pods (the blog's "about 5,000" assumed ~300 B per endpoint).
	if p := r.EtcdLimitPods.Protobuf; p < 10000 || p > 20000 {
		t.Errorf("etcd limit at %d pods, want 10k..20k", p)
	}
	obj := endpointsObject()
	var ready elems
	for i := range r.EtcdLimitPods.Protobuf - 1 {
		ready.add(addressSize(address(pod(0, i, 5000))))
	}
	var subsets elems
	subsets.add(subsetFrom(ready, elems{}, ports))
	if s := endpointsFrom(obj, stored, subsets); s.Protobuf > EtcdDefaultMaxRequestBytes {
		t.Errorf("%d pods already exceed the limit (%d bytes)", r.EtcdLimitPods.Protobuf-1, s.Protobuf)
	}

	// P = 20, N = 10: all three designs about equal (tens of KB).
	small, _ := Simulate(Config{Pods: 20, Nodes: 10})
	for _, d := range small.Designs {
		sent, _ := small.Sent(d.RollingBytes)
		within(d.Name+" small rolling update bytes sent", sent, 50e3, 1e6)
	}
}

func TestSimulateRejectsBadConfig(t *testing.T) {
	_, err := Simulate(Config{Pods: 0, Nodes: -1})
	if err == nil || !strings.Contains(err.Error(), "Config.Pods: 0") || !strings.Contains(err.Error(), "Config.Nodes: -1") {
		t.Errorf("Simulate(bad) error = %v, want both fields named", err)
	}
}
