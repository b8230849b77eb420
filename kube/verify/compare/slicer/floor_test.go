package slicercompare

import (
	"hash/maphash"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/kube/internal/podload"
	"github.com/fairslice/fairslice/slicer"
)

// floorCheck is the least work a no-op sync without memory has to do, as
// a yardstick for the fresh-Converter benchmark: convert the existing
// slices (a plan returns them as its unchanged slices), put their
// endpoints in a hash table by address and pod name, then look each pod
// up and compare what its endpoint would be with what is there. It builds
// no endpoint, runs no slicer, and checks less than a no-op needs (one
// IPv4 address per pod, no hostname, the fleet's ports, its nodes' zones
// known in advance, no slice-level labels or owners), so a real
// memoryless no-op cannot be faster. The pods and the endpoints they
// match are loaded ahead, a batch at a time, as the adapter does, so that
// their cache misses overlap.
type floorCheck struct {
	seed    maphash.Seed
	zones   map[string]string // node name to zone
	table   []floorSlot
	eps     []*slicer.Endpoint
	matched []bool
	hashes  [podload.Batch]uint64
	sum     uintptr // what the loads ahead read, so they are kept
}

type floorSlot struct {
	tag uint32
	idx int32 // index+1 into eps; 0 is empty
}

func newFloorCheck(f *realFleet) *floorCheck {
	c := &floorCheck{seed: maphash.MakeSeed(), zones: map[string]string{}}
	for _, n := range f.nodeObjs {
		c.zones[n.Name] = n.Labels[corev1.LabelTopologyZone]
	}
	return c
}

func (c *floorCheck) hash(ip, name string) uint64 {
	return maphash.String(c.seed, ip) ^ maphash.String(c.seed, name)*0x9e3779b97f4a7c15
}

// noOp reports whether pods, the fleet's ready pods, are exactly the
// endpoints of existing. Its tables are new every call, as a fresh
// Converter's would be.
func (c *floorCheck) noOp(pods []*corev1.Pod, existing []*discovery.EndpointSlice) bool {
	var conv endpointslice.Converter
	slices, err := conv.Existing(existing)
	if err != nil {
		return false
	}
	n := 0
	for i := range slices {
		n += len(slices[i].Endpoints)
	}
	size := 8
	for size < 2*n {
		size <<= 1
	}
	c.table = make([]floorSlot, size)
	c.eps = make([]*slicer.Endpoint, 0, n)
	c.matched = make([]bool, n)
	mask := uint64(size - 1)
	for i := range slices {
		for j := range slices[i].Endpoints {
			e := &slices[i].Endpoints[j]
			if len(e.Addresses) != 1 {
				return false
			}
			h := c.hash(e.Addresses[0], e.TargetRef.Name)
			k := h & mask
			for c.table[k].idx != 0 {
				k = (k + 1) & mask
			}
			c.eps = append(c.eps, e)
			c.table[k] = floorSlot{tag: uint32(h >> 32), idx: int32(len(c.eps))}
		}
	}
	lastNode, lastZone := "", ""
	for k, p := range pods {
		if k%podload.Batch == 0 {
			c.loadAhead(pods, k, mask)
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || len(p.Status.PodIPs) != 1 {
			return false
		}
		ip := p.Status.PodIPs[0].IP
		h := c.hash(ip, p.Name)
		idx := int32(-1)
		for j := h & mask; c.table[j].idx != 0; j = (j + 1) & mask {
			if c.table[j].tag != uint32(h>>32) {
				continue
			}
			if e := c.eps[c.table[j].idx-1]; e.Addresses[0] == ip && e.TargetRef.Name == p.Name {
				idx = c.table[j].idx - 1
				break
			}
		}
		if idx < 0 || c.matched[idx] {
			return false
		}
		c.matched[idx] = true
		e := c.eps[idx]
		if p.Spec.NodeName != lastNode {
			lastNode, lastZone = p.Spec.NodeName, c.zones[p.Spec.NodeName]
		}
		conds := slicer.PodConditions(adapter.PodReady(p), p.DeletionTimestamp != nil, false)
		if e.Conditions != conds || e.NodeName != p.Spec.NodeName || e.Zone != lastZone || e.Hostname != "" ||
			e.TargetRef.UID != string(p.UID) || e.TargetRef.Namespace != p.Namespace || e.TargetRef.Kind != "Pod" {
			return false
		}
		if port, ok := containerPort(p, "metrics"); !ok || port != 9091 {
			return false
		}
	}
	return len(pods) == len(c.eps)
}

// containerPort returns the number of pod's container port called name.
func containerPort(p *corev1.Pod, name string) (int32, bool) {
	for i := range p.Spec.Containers {
		for _, port := range p.Spec.Containers[i].Ports {
			if port.Name == name {
				return port.ContainerPort, true
			}
		}
	}
	return 0, false
}

// loadAhead loads ahead for pods[k:k+podload.Batch], k a multiple of
// podload.Batch: the pods as the adapter does, then the table slots and
// the endpoints this batch will match.
func (c *floorCheck) loadAhead(pods []*corev1.Pod, k int, mask uint64) {
	s := podload.Ahead(pods, k)
	batch := pods[k:min(k+podload.Batch, len(pods))]
	for i, p := range batch {
		if len(p.Status.PodIPs) > 0 {
			c.hashes[i] = c.hash(p.Status.PodIPs[0].IP, p.Name)
			s += uintptr(c.table[c.hashes[i]&mask].idx)
		}
	}
	for i := range batch {
		if j := c.table[c.hashes[i]&mask].idx; j != 0 {
			e := c.eps[j-1]
			s += uintptr(len(e.Addresses)) + uintptr(len(e.TargetRef.UID))
		}
	}
	for i := range batch {
		if j := c.table[c.hashes[i]&mask].idx; j != 0 {
			e := c.eps[j-1]
			s += loadByte(e.Addresses[0]) + loadByte(e.TargetRef.Name) + loadByte(e.TargetRef.UID) + loadByte(e.NodeName)
		}
	}
	c.sum += s
}

// loadByte loads the first byte of s, or nothing if s is empty.
func loadByte(s string) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(*unsafe.StringData(s))
}

// TestFloorCheck: the yardstick answers no-op for the fleet and not for
// a changed pod, a missing pod or a pod listed twice, so that the
// benchmark times a check that checks.
func TestFloorCheck(t *testing.T) {
	f := newRealFleet(t, 500)
	c := newFloorCheck(f)
	if !c.noOp(f.orders[1], f.existing) {
		t.Fatal("the fleet is not a no-op")
	}
	notReady := f.pods[17].DeepCopy()
	notReady.Status.Conditions[3].Status = corev1.ConditionFalse
	moved := f.pods[18].DeepCopy()
	moved.Spec.NodeName = "node-29"
	for name, pods := range map[string][]*corev1.Pod{
		"not ready": append(append([]*corev1.Pod{}, f.pods[:17]...), append([]*corev1.Pod{notReady}, f.pods[18:]...)...),
		"moved":     append(append([]*corev1.Pod{}, f.pods[:18]...), append([]*corev1.Pod{moved}, f.pods[19:]...)...),
		"missing":   f.pods[1:],
		"twice":     append([]*corev1.Pod{f.pods[1]}, f.pods[1:]...),
	} {
		if c.noOp(pods, f.existing) {
			t.Errorf("%s: no-op", name)
		}
	}
}

// BenchmarkRealisticNoOpFloor puts upstream's no-op sync next to
// floorCheck, the least work any no-op sync without memory does on the
// realistic fixture: impl=upstream over impl=floor is the highest ratio a
// memoryless fairslice sync could reach on this machine (compare with
// BenchmarkRealisticNoOpFresh's impl=fairslice in the same run).
func BenchmarkRealisticNoOpFloor(b *testing.B) {
	f := newRealFleet(b, realN)
	b.Run("impl=upstream", f.upstreamNoOp)
	b.Run("impl=floor", func(b *testing.B) {
		c := newFloorCheck(f)
		k := 0
		perEndpoint(b, realN, func() {
			k++
			if !c.noOp(f.orders[k%len(f.orders)], f.existing) {
				b.Fatalf("sync %d: not a no-op", k)
			}
		})
	})
}
