package slicercompare

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/internal/slicerun"
)

// TestConverterMemo checks that a long-lived Converter, which remembers
// pods and slices by pointer, converts exactly like a fresh one while
// pods, nodes and the Service change between calls (each change replacing
// the object, as informers do).
func TestConverterMemo(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var long endpointslice.Converter
	for i := range 100 {
		in := randomScenario(rng)
		for step := range 4 {
			var fresh endpointslice.Converter
			nodes := slicerun.NodeLister(in.Nodes)
			want, werr := fresh.Desired(in.Service, in.Pods, nodes)
			got, gerr := long.Desired(in.Service, in.Pods, nodes)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" || (werr == nil) != (gerr == nil) {
				t.Fatalf("scenario %d step %d: remembered conversion differs (-fresh +remembered):\n%s\nerrors %v / %v", i, step, diff, werr, gerr)
			}
			if diff := cmp.Diff(fresh.Existing(in.Existing), long.Existing(in.Existing), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("scenario %d step %d: remembered slices differ:\n%s", i, step, diff)
			}
			// Change something, informer style.
			switch rng.IntN(4) {
			case 0:
				if len(in.Pods) > 0 {
					k := rng.IntN(len(in.Pods))
					p := in.Pods[k].DeepCopy()
					mutatePod(rng, p)
					in.Pods = append(append([]*corev1.Pod(nil), in.Pods[:k]...), append([]*corev1.Pod{p}, in.Pods[k+1:]...)...)
				}
			case 1:
				k := rng.IntN(len(in.Nodes))
				n := in.Nodes[k].DeepCopy()
				n.Labels = map[string]string{corev1.LabelTopologyZone: "zone-new"}
				in.Nodes = append(append([]*corev1.Node(nil), in.Nodes[:k]...), append([]*corev1.Node{n}, in.Nodes[k+1:]...)...)
			case 2:
				s := in.Service.DeepCopy()
				s.Spec.PublishNotReadyAddresses = !s.Spec.PublishNotReadyAddresses
				in.Service = s
			default:
				in.Nodes = in.Nodes[:len(in.Nodes)-1] // a node disappears
				if len(in.Nodes) == 0 {
					in.Nodes = randomScenario(rng).Nodes
				}
			}
		}
	}
}
