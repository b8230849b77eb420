package adapter

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fairslice/fairslice/slicer"
)

// failingNodes is a NodeGetter whose lookups fail (an API outage).
type failingNodes struct{}

func (failingNodes) Get(name string) (*corev1.Node, error) {
	return nil, errors.New("connection refused")
}

func trialService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
}

func trialPods(n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		ip := "10.1.0." + string(rune('1'+i))
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p" + ip},
			Spec:       corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	return pods
}

// TestDesiredNodeLookupFailureIsNotSkipped: a failed node lookup is a
// failure (no groups), told apart from pods skipped for a missing node,
// so that a caller never reconciles an empty desired state and deletes
// every endpoint.
func TestDesiredNodeLookupFailureIsNotSkipped(t *testing.T) {
	var c Converter
	groups, err := c.Desired(trialService(), trialPods(3), failingNodes{})
	var skipped *SkippedPodsError
	if groups != nil || err == nil || errors.As(err, &skipped) {
		t.Errorf("Desired(node lookups fail) = %d groups, error %v; want no groups and a failure that is not a *SkippedPodsError", len(groups), err)
	}
	groups, err = c.Desired(trialService(), trialPods(3), nodeMap{})
	if groups == nil || !errors.As(err, &skipped) || len(skipped.Errs) != 3 {
		t.Errorf("Desired(nodes missing) = %v groups, error %v; want the groups and a *SkippedPodsError for 3 pods", groups, err)
	}
}

// TestNilInputsAreErrors: nil objects are reported, not dereferenced.
func TestNilInputsAreErrors(t *testing.T) {
	svc, pods, nodes := trialService(), trialPods(2), nodeMap{"n1": {ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}
	withNil := append(trialPods(1), nil)
	for _, tc := range []struct {
		name  string
		svc   *corev1.Service
		pods  []*corev1.Pod
		nodes NodeGetter
		slice []*discovery.EndpointSlice
		want  string
	}{
		{"nil Service", nil, pods, nodes, nil, "Service: must not be nil"},
		{"nil pod", svc, withNil, nodes, nil, "pods[1]: must not be nil"},
		{"nil NodeGetter", svc, pods, nil, nil, "NodeGetter: must not be nil"},
		{"nil slice", svc, pods, nodes, []*discovery.EndpointSlice{nil}, "existing[0]: must not be nil"},
	} {
		var c Converter
		_, derr := c.Desired(tc.svc, tc.pods, tc.nodes)
		_, eerr := c.Existing(tc.slice)
		if err := errors.Join(derr, eerr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Converter errors %v, want one containing %q", tc.name, err, tc.want)
		}
		s, _ := NewSyncer(slicer.Options{})
		facts := slicer.Service{Name: "web", AddressTypes: []slicer.AddressType{slicer.IPv4}}
		// Twice: the second call may be answered from memory.
		for range 2 {
			if _, _, err := s.Plan(facts, tc.svc, tc.pods, tc.nodes, tc.slice); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: Syncer.Plan error %v, want one containing %q", tc.name, err, tc.want)
			}
		}
	}
}

// TestObjectsRefusesUnknownSlices: an update or delete needs the existing
// object (its resourceVersion); without it Objects fails instead of
// emitting an unconditional write.
func TestObjectsRefusesUnknownSlices(t *testing.T) {
	s, _ := NewSyncer(slicer.Options{})
	svc, nodes := trialService(), nodeMap{"n1": {ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}
	plan, _, err := s.Plan(ServiceFacts(svc, time.Time{}), svc, trialPods(2), nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	created := ToEndpointSlice(plan.Creates[0])
	created.Name, created.ResourceVersion = "web-abc", "7"
	existing := []*discovery.EndpointSlice{created}
	plan, _, err = s.Plan(ServiceFacts(svc, time.Time{}), svc, trialPods(3), nodes, existing)
	if err != nil || len(plan.Updates) != 1 {
		t.Fatalf("scale up: %d updates, error %v", len(plan.Updates), err)
	}
	if _, _, _, err := Objects(plan, nil); err == nil || !strings.Contains(err.Error(), `update of "web-abc"`) {
		t.Errorf("Objects(plan, nil) error = %v, want the update refused", err)
	}
	_, updates, _, err := Objects(plan, existing)
	if err != nil || len(updates) != 1 || updates[0].ResourceVersion != "7" {
		t.Errorf("Objects(plan, existing) = %d updates, error %v; want one with resourceVersion 7", len(updates), err)
	}
}

// flakyNodes fails the lookup of one node once, then answers.
type flakyNodes struct {
	nodeMap
	fail string
}

func (f *flakyNodes) Get(name string) (*corev1.Node, error) {
	if name == f.fail {
		f.fail = ""
		return nil, errors.New("timeout")
	}
	return f.nodeMap.Get(name)
}

// TestDesiredAfterFailedFirstCall: a first call that fails half-way
// leaves nothing half-remembered.
func TestDesiredAfterFailedFirstCall(t *testing.T) {
	svc := trialService()
	pods := trialPods(4)
	pods[2].Spec.NodeName = "n2"
	nodes := nodeMap{"n1": {ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, "n2": {ObjectMeta: metav1.ObjectMeta{Name: "n2"}}}
	var c Converter
	if _, err := c.Desired(svc, pods, &flakyNodes{nodeMap: nodes, fail: "n2"}); err == nil {
		t.Fatal("Desired(lookup of n2 fails): no error")
	}
	for range 2 {
		groups, err := c.Desired(svc, pods, nodes)
		if err != nil || len(groups) != 1 || len(groups[0].Endpoints) != 4 {
			t.Fatalf("Desired after a failed first call = %v, error %v; want 4 endpoints", groups, err)
		}
	}
}
