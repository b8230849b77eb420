// Package podload loads ahead the words of pod objects that turning a pod
// into its endpoint reads, so that the cache misses of several pods
// overlap. The kube/endpointslice adapter uses it when it converts every
// pod of a Service, and kube/verify/compare/slicer's yardstick of the least work
// of a sync without memory uses the same loads.
package podload

import (
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// A sync without memory reads every pod object once, and the
// objects (and the arrays and strings they point to) are scattered over
// the heap: reading one is a chain of cache (and TLB) misses, each waiting
// for the one before, and the conversion of one pod is too long for the
// processor to start on the next pod's misses meanwhile. Go has no
// prefetch instruction, so the caller loads those words ahead, a batch of
// pods at a time, in three stages (the objects, then what they point to,
// then what that points to), with loads whose values are only summed: the
// loads of a batch are independent of each other, so the processor
// overlaps their misses, and converting a pod then finds its data in
// cache.
const Batch = 8

// firstByte loads the first byte of s, or nothing if s is empty.
func firstByte(s string) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(*unsafe.StringData(s))
}

// touchObject loads one word from each cache line of the pod object that
// a conversion reads.
func touchObject(p *corev1.Pod) uintptr {
	return uintptr(len(p.Name)) + uintptr(len(p.UID)) + uintptr(unsafe.Pointer(p.DeletionTimestamp)) +
		uintptr(len(p.Spec.Containers)) + uintptr(len(p.Spec.NodeName)) + uintptr(len(p.Spec.Hostname)) +
		uintptr(len(p.Status.Conditions)) + uintptr(len(p.Status.PodIPs))
}

// touchArrays loads the arrays the pod object points to (containers,
// conditions, pod IPs) and the first byte of its strings.
func touchArrays(p *corev1.Pod) uintptr {
	s := firstByte(p.Name) + firstByte(string(p.UID)) + firstByte(p.Spec.NodeName) + firstByte(p.Namespace)
	for i := range p.Spec.Containers {
		s += uintptr(len(p.Spec.Containers[i].Ports))
	}
	for i := range p.Status.Conditions {
		s += uintptr(len(p.Status.Conditions[i].Type))
	}
	if len(p.Status.PodIPs) > 0 {
		s += uintptr(len(p.Status.PodIPs[0].IP))
	}
	return s
}

// touchBytes loads what the arrays point to: the container ports and
// their names, the IP's bytes, and the type and status of the conditions
// whose type is as long as Ready's (PodReady tells the others apart by
// length alone: loading their statuses would cost lines it never reads).
func touchBytes(p *corev1.Pod) uintptr {
	var s uintptr
	for i := range p.Spec.Containers {
		for _, port := range p.Spec.Containers[i].Ports {
			s += firstByte(port.Name)
		}
	}
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; len(c.Type) == len(corev1.PodReady) {
			s += firstByte(string(c.Type)) + firstByte(string(c.Status))
		}
	}
	if len(p.Status.PodIPs) > 0 {
		s += firstByte(p.Status.PodIPs[0].IP)
	}
	return s
}

// Ahead loads ahead of converting pods[k:k+Batch], k a multiple of
// Batch: the objects of the batch after next, the arrays of the next
// batch, and the bytes of this one (on the first batch, all three stages
// of the first batches). It returns the sum of what it loaded, which the
// caller keeps (adds to a field) so that the loads are not optimized
// away. The pods must not be nil.
func Ahead(pods []*corev1.Pod, k int) uintptr {
	var s uintptr
	objects, arrays := k+2*Batch, k+Batch
	if k == 0 {
		objects, arrays = 0, 0
	}
	n := len(pods)
	for _, p := range pods[min(objects, n):min(k+3*Batch, n)] {
		s += touchObject(p)
	}
	for _, p := range pods[min(arrays, n):min(k+2*Batch, n)] {
		s += touchArrays(p)
	}
	for _, p := range pods[k:min(k+Batch, n)] {
		s += touchBytes(p)
	}
	return s
}
