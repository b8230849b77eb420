package adapter

import (
	"math/bits"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// podIndex maps pod objects (by pointer) to memo indexes. It is an
// open-addressing table with linear probing over the pointers' addresses
// (Go's collector does not move objects, and the table holds the
// pointers, so an address is never reused while it is in the table). A
// no-op sync is one lookup per pod, and this is about twice as fast as a
// map there. The zero value is empty; entries are only added, and the
// whole index is rebuilt to drop some.
type podIndex struct {
	slots []podSlot // len is a power of two, or 0
	n     int
	shift uint
}

type podSlot struct {
	p *corev1.Pod
	i int32
}

func (x *podIndex) home(p *corev1.Pod) uint64 {
	return (uint64(uintptr(unsafe.Pointer(p))) * 0x9e3779b97f4a7c15) >> x.shift
}

// get returns the index of p.
func (x *podIndex) get(p *corev1.Pod) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	mask := uint64(len(x.slots) - 1)
	for j := x.home(p); ; j = (j + 1) & mask {
		s := &x.slots[j]
		if s.p == p {
			return s.i, true
		}
		if s.p == nil {
			return 0, false
		}
	}
}

// put sets the index of p.
func (x *podIndex) put(p *corev1.Pod, i int32) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow(2 * (x.n + 1))
	}
	mask := uint64(len(x.slots) - 1)
	for j := x.home(p); ; j = (j + 1) & mask {
		s := &x.slots[j]
		if s.p == p {
			s.i = i
			return
		}
		if s.p == nil {
			s.p, s.i = p, i
			x.n++
			return
		}
	}
}

// grow rehashes into room for at least n entries.
func (x *podIndex) grow(n int) {
	size := max(16, 1<<bits.Len(uint(2*n-1)))
	old := x.slots
	x.slots = make([]podSlot, size)
	x.shift = uint(64 - bits.TrailingZeros(uint(size)))
	x.n = 0
	for _, s := range old {
		if s.p != nil {
			x.put(s.p, s.i)
		}
	}
}

// reset empties the index, with room for n entries.
func (x *podIndex) reset(n int) {
	*x = podIndex{}
	if n > 0 {
		x.grow(n)
	}
}
