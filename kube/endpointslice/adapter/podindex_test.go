package adapter

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodIndex checks the index against a map through growth and resets.
func TestPodIndex(t *testing.T) {
	var x podIndex
	want := map[*corev1.Pod]int32{}
	var pods []*corev1.Pod
	for i := range 5000 {
		p := &corev1.Pod{}
		pods = append(pods, p)
		x.put(p, int32(i))
		want[p] = int32(i)
		if i%7 == 0 { // overwrite an earlier one
			q := pods[i/2]
			x.put(q, int32(-i))
			want[q] = int32(-i)
		}
	}
	if x.n != len(want) {
		t.Errorf("podIndex has %d entries, want %d", x.n, len(want))
	}
	for p, i := range want {
		if got, ok := x.get(p); !ok || got != i {
			t.Fatalf("get(pod) = %d, %v, want %d, true", got, ok, i)
		}
	}
	if _, ok := x.get(&corev1.Pod{}); ok {
		t.Error("get(unknown pod) found it")
	}
	x.reset(0)
	if _, ok := x.get(pods[0]); ok || x.n != 0 {
		t.Error("reset index still holds pods")
	}
}
