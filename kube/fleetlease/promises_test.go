package fleetlease

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPublishKeepsTheLeasesOtherMetadata: updating a replica's Lease
// sets the fleet's label and the summary's annotation, and keeps the
// labels and annotations others put there.
func TestPublishKeepsTheLeasesOtherMetadata(t *testing.T) {
	cs := fake.NewClientset()
	ctx := context.Background()
	s := newStore(t, cs, "api")
	if err := s.Publish(ctx, summary("r0", 1)); err != nil {
		t.Fatal(err)
	}
	leases := cs.CoordinationV1().Leases("kube-system")
	l, err := leases.Get(ctx, "api-r0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Labels["team"], l.Annotations["note"] = "infra", "kept"
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(ctx, summary("r0", 2)); err != nil {
		t.Fatal(err)
	}
	if l, err = leases.Get(ctx, "api-r0", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if l.Labels["team"] != "infra" || l.Annotations["note"] != "kept" || l.Labels[LabelFleet] != "api" || !strings.Contains(l.Annotations[AnnotationSummary], `"p":2`) {
		t.Errorf("Lease after the second Publish: labels %v, annotations %v; want the others' kept beside the fleet's", l.Labels, l.Annotations)
	}
}

// TestEncodeKeepsASummaryOfExactlyTheBound: a summary whose encoding is
// exactly MaxSummaryBytes keeps all its flows.
func TestEncodeKeepsASummaryOfExactlyTheBound(t *testing.T) {
	sum := summary("r0", 1, "global-default/a", "global-default/b")
	b, err := Encode(sum)
	if err != nil {
		t.Fatal(err)
	}
	sum.Flows[1].Flow += strings.Repeat("x", MaxSummaryBytes-len(b))
	b, err = Encode(sum)
	if err != nil || len(b) != MaxSummaryBytes || !strings.Contains(string(b), sum.Flows[1].Flow) {
		t.Errorf("Encode(a summary of %d bytes) = %d bytes, %v; want it whole", MaxSummaryBytes, len(b), err)
	}
}

// TestFromWireTakesAnOutOfRangeLevelAsNamed: a flow whose level index is
// past the levels (a writer that left it out) keeps the level name it
// carries instead of failing.
func TestFromWireTakesAnOutOfRangeLevelAsNamed(t *testing.T) {
	w := wireSummary{Replica: "r0", Period: 1, Levels: []wireLevel{{Name: "global-default"}},
		Flows: []wireFlow{{Level: 1, Name: "other", Flow: "x"}}}
	if got := fromWire(w); len(got.Flows) != 1 || got.Flows[0].Level != "other" {
		t.Errorf("fromWire(level index 1 of 1) = %+v, want the flow at its named level", got.Flows)
	}
}
