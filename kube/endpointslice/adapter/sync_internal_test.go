package adapter

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fairslice/fairslice/slicer"
)

type nodeMap map[string]*corev1.Node

func (m nodeMap) Get(name string) (*corev1.Node, error) {
	if n, ok := m[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

// TestSyncerRecognisesNoOp checks when the Syncer answers from memory:
// after a no-op sync, for the same objects in any order, and never after
// any of them is replaced.
func TestSyncerRecognisesNoOp(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	nodes := nodeMap{"n1": {ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}
	var pods []*corev1.Pod
	for _, ip := range []string{"10.1.0.1", "10.1.0.2", "10.1.0.3"} {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p" + ip},
			Spec:       corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	s, err := NewSyncer(slicer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	facts := ServiceFacts(svc, time.Time{})
	plan, _, err := s.Plan(facts, svc, pods, nodes, nil)
	if err != nil || len(plan.Creates) != 1 {
		t.Fatalf("first sync: %d creates, error %v", len(plan.Creates), err)
	}
	created := ToEndpointSlice(plan.Creates[0])
	created.Name = "web-abc"
	existing := []*discovery.EndpointSlice{created}

	sync := func(step string, facts slicer.Service, svc *corev1.Service, pods []*corev1.Pod, nodes nodeMap, wantHit bool) {
		t.Helper()
		before := s.hits
		plan, skipped, err := s.Plan(facts, svc, pods, nodes, existing)
		if err != nil || skipped != nil {
			t.Fatalf("%s: errors %v, %v", step, skipped, err)
		}
		if hit := s.hits > before; hit != wantHit {
			t.Errorf("%s: answered from memory %v, want %v", step, hit, wantHit)
		}
		if plan.Writes() != 0 || len(plan.Unchanged) != 1 {
			t.Errorf("%s: %d writes, %d unchanged; want a no-op", step, plan.Writes(), len(plan.Unchanged))
		}
	}
	sync("first no-op", facts, svc, pods, nodes, false)
	sync("again", facts, svc, pods, nodes, true)
	reversed := slices.Clone(pods)
	slices.Reverse(reversed)
	sync("other order", facts, svc, reversed, nodes, true)

	// A pod replaced by an equal copy: not the same object, but its
	// endpoint is the same, so the remembered no-op still answers.
	copied := slices.Clone(pods)
	copied[1] = pods[1].DeepCopy()
	sync("pod replaced", facts, svc, copied, nodes, true)
	sync("again after pod replaced", facts, svc, copied, nodes, true)
	// A pod whose readiness flipped: planned from memory, as the full
	// path plans it.
	flipped := slices.Clone(copied)
	flipped[2] = copied[2].DeepCopy()
	flipped[2].Status.Conditions[0].Status = corev1.ConditionFalse
	trigger := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	incrs := s.incrs
	got, _, err := s.Plan(ServiceFacts(svc, trigger), svc, flipped, nodes, existing)
	if err != nil || s.incrs != incrs+1 {
		t.Fatalf("readiness flip: error %v, planned from memory %v, want true", err, s.incrs != incrs+1)
	}
	full, _ := NewSyncer(slicer.Options{})
	want, _, err := full.Plan(ServiceFacts(svc, trigger), svc, flipped, nodes, existing)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("readiness flip: plan from memory differs (-full +memory):\n%s", diff)
	}
	if len(got.Updates) != 1 || got.Updates[0].Endpoints[2].Conditions.Ready != slicer.False {
		t.Fatalf("readiness flip: %d updates %+v, want the slice with p10.1.0.3 not ready", len(got.Updates), got.Updates)
	}
	sync("back after flip", facts, svc, copied, nodes, true)
	// A repeated pod is not the same set, even with the same count.
	repeated := slices.Clone(copied)
	repeated[0] = repeated[1]
	if _, _, err := s.Plan(facts, svc, repeated, nodes, existing); err == nil {
		t.Error("repeated pod: no error")
	}
	sync("back", facts, svc, copied, nodes, false)
	// A Node object replaced with its zone unchanged (a kubelet status
	// update) keeps the memory; a zone change does not.
	heartbeat := nodes["n1"].DeepCopy()
	heartbeat.ResourceVersion = "2"
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	nodes = nodeMap{"n1": heartbeat}
	sync("node replaced, zone unchanged", facts, svc, copied, nodes, true)
	rezoned := heartbeat.DeepCopy()
	rezoned.Labels = map[string]string{corev1.LabelTopologyZone: "zone-b"}
	before := s.hits
	if plan, _, err := s.Plan(facts, svc, copied, nodeMap{"n1": rezoned}, existing); err != nil || s.hits != before || len(plan.Updates) != 1 {
		t.Errorf("node zone changed: %d updates, from memory %v, error %v; want the slice rewritten", len(plan.Updates), s.hits != before, err)
	}
	sync("back to no zone", facts, svc, copied, nodes, false)
	sync("again after node changes", facts, svc, copied, nodes, true)
	svc2 := svc.DeepCopy()
	svc2.Spec.PublishNotReadyAddresses = true // changes no condition: pods are ready
	sync("spec changed", ServiceFacts(svc2, time.Time{}), svc2, copied, nodes, false)
	sync("again after spec changed", ServiceFacts(svc2, time.Time{}), svc2, copied, nodes, true)
	facts2 := ServiceFacts(svc2, time.Time{})
	facts2.TopologyHints = true
	sync("facts changed", facts2, svc2, copied, nodes, false)
	existing = []*discovery.EndpointSlice{existing[0].DeepCopy()}
	sync("slice replaced", facts2, svc2, copied, nodes, false)
	sync("again after slice replaced", facts2, svc2, copied, nodes, true)

	// Every pod on a missing node: they are skipped, and the plan is the
	// placeholder, not a failure.
	fresh, _ := NewSyncer(slicer.Options{})
	plan, skipped, err := fresh.Plan(facts, svc, pods, nodeMap{}, nil)
	if err != nil || skipped == nil || len(plan.Creates) != 1 || len(plan.Creates[0].Endpoints) != 0 {
		t.Errorf("pods on a missing node: %d creates, skipped %v, error %v; want the placeholder and the pods reported", len(plan.Creates), skipped, err)
	}
}
