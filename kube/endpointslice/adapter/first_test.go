package adapter

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fairslice/fairslice/slicer"
)

// firstPods returns n ready pods on node n1 with distinct IPs, and more
// than a prefetch batch of them, so that the loads ahead cover every case.
func firstPods(n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		ip := fmt.Sprintf("10.2.%d.%d", i/200, i%200+1)
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%03d", i), UID: types.UID("u" + ip)},
			Spec:       corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	return pods
}

// TestDesiredFirstCallMemory: a Converter's first call, whether its
// endpoints form one block returned as is (every pod an endpoint of one
// port set) or not (a terminal pod, a pod on a missing node, a second
// port set), remembers every pod as converted: later calls on it, with
// the pods reordered and some replaced, convert exactly like a new
// Converter.
func TestDesiredFirstCallMemory(t *testing.T) {
	nodes := nodeMap{"n1": {ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels: map[string]string{corev1.LabelTopologyZone: "z1"}}}}
	cases := map[string]func(pods []*corev1.Pod){
		"one block": func([]*corev1.Pod) {},
		"terminal pod": func(pods []*corev1.Pod) {
			pods[5].Status.Phase = corev1.PodSucceeded
		},
		"missing node": func(pods []*corev1.Pod) {
			pods[30].Spec.NodeName = "gone"
		},
		"second port set": func(pods []*corev1.Pod) {
			pods[0].Spec.Containers = []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}
		},
	}
	for name, mutate := range cases {
		svc := trialService()
		svc.Spec.Ports[0].TargetPort = intstr.FromString("http") // resolved for one pod only in "second port set"
		pods := firstPods(50)
		mutate(pods)
		var c Converter
		var block, blockCopy []slicer.Endpoint // the first call's endpoints, and a copy
		for step := range 4 {
			if step > 0 {
				// Informer style: a new order, one pod replaced.
				pods = append(pods[7:], pods[:7]...)
				p := pods[step*3].DeepCopy()
				p.Status.Conditions[0].Status = corev1.ConditionFalse
				pods[step*3] = p
			}
			var fresh Converter
			want, werr := fresh.Desired(svc, pods, nodes)
			got, gerr := c.Desired(svc, pods, nodes)
			if diff := cmp.Diff(want, got); diff != "" || fmt.Sprint(werr) != fmt.Sprint(gerr) {
				t.Fatalf("%s, call %d: differs from a new Converter's (-new +remembered):\n%s\nerrors %v / %v", name, step, diff, werr, gerr)
			}
			if step == 0 && len(got) == 1 {
				block = got[0].Endpoints
				blockCopy = append([]slicer.Endpoint(nil), block...)
			}
		}
		// In one block, the first call's group is the Converter's memory:
		// later calls must not use it as scratch. (Otherwise what Desired
		// returns is valid until the next call only.)
		if diff := cmp.Diff(blockCopy, block); name == "one block" && diff != "" {
			t.Errorf("%s: the first call's groups changed under later calls:\n%s", name, diff)
		}
	}
}
