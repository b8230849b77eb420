//lint:file-ignore SA1019 the mirroring controller exists to read the deprecated core/v1 Endpoints API

package endpointslicecompare

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fairslice/fairslice/kube/internal/slicescenario"
)

// mirroredContent is the content of every EndpointSlice in namespace ns
// of client, normalised for generated names and order.
func mirroredContent(t *testing.T, client *fake.Clientset) slicescenario.Content {
	t.Helper()
	list, err := client.DiscoveryV1().EndpointSlices("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ptrs := make([]*discovery.EndpointSlice, len(list.Items))
	for i := range list.Items {
		ptrs[i] = &list.Items[i]
	}
	return slicescenario.ContentOf(ptrs)
}

// requireSameMirroredContent waits until both sides have synced since
// before (their sync counts), fairslice's slices satisfy want (the step
// has taken effect), and both sides' slices hold the same content, the
// same over three polls in a row (so that neither is still moving); it
// fails the test if that does not happen within 10 s, showing the
// difference.
func requireSameMirroredContent(t *testing.T, step string, up, ours *mirrorSide, before [2]uint64, want func(slicescenario.Content) bool) {
	t.Helper()
	var upC, ourC, last slicescenario.Content
	stable := 0
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		upC, ourC = mirroredContent(t, up.client), mirroredContent(t, ours.client)
		synced := durationCount(t, up.g) > before[0] && durationCount(t, ours.g) > before[1]
		if synced && want(ourC) && cmp.Equal(upC, ourC) && cmp.Equal(ourC, last) {
			stable++
		} else {
			stable = 0
		}
		last = ourC
		if stable >= 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: mirrored content within 10 s (want met: %v) (-upstream +fairslice):\n%s", step, want(ourC), cmp.Diff(upC, ourC))
		}
	}
}

// syncCounts returns both sides' sync counts.
func syncCounts(t *testing.T, up, ours *mirrorSide) [2]uint64 {
	t.Helper()
	return [2]uint64{durationCount(t, up.g), durationCount(t, ours.g)}
}

// TestMirroredContentMatchesUpstream runs upstream's mirroring controller
// and fairslice's, each on its own fake clientset, through the same
// Endpoints changes, and after each requires the mirrored EndpointSlices
// to hold the same content (names aside): labels, annotations, address
// types, ports, endpoints with conditions, hostnames, node names, target
// references, owner references. The Endpoints carry labels and
// annotations upstream copies and ones it does not (the
// last-applied-configuration and trigger-time annotations; the
// service-name and managed-by labels it overwrites), upstream's
// skip-mirror label both "false" (copied) and "true" (not mirrored), IPs
// in non-canonical forms (leading zeros, upper case, IPv4-mapped IPv6),
// not-ready addresses, hostnames, and a subset with more addresses than
// the per-subset maximum (3).
func TestMirroredContentMatchesUpstream(t *testing.T) {
	up, ours := startMirrorSide(t, true), startMirrorSide(t, false)
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext", UID: "svc-uid"}}
	node := "node-1"
	podRef := func(name string) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}
	}
	// No app protocol on the ports two subsets share: upstream's repacking
	// keys ports by value, app protocol pointer included, so after a decode
	// it never merges subsets whose ports have one, and then mirrors an
	// arbitrary 3 of the merged key's endpoints (map order).
	web := []corev1.EndpointPort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP}}
	dns := []corev1.EndpointPort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, AppProtocol: new("dns")}}
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext", UID: "ep-uid",
			Labels: map[string]string{"app": "ext", discovery.LabelSkipMirror: "false",
				discovery.LabelServiceName: "not-ext", discovery.LabelManagedBy: "someone-else"},
			Annotations: map[string]string{"team": "a", corev1.LastAppliedConfigAnnotation: `{"kind":"Endpoints"}`,
				corev1.EndpointsLastChangeTriggerTime: "2026-01-02T03:04:05Z"},
		},
		Subsets: []corev1.EndpointSubset{
			// Five ready addresses, over the maximum of 3 per subset.
			{Addresses: []corev1.EndpointAddress{
				{IP: "010.000.000.001", Hostname: "a", NodeName: &node, TargetRef: podRef("a")},
				{IP: "10.0.0.2", TargetRef: podRef("b")},
				{IP: "::ffff:10.0.0.5"},
				{IP: "10.0.0.6"},
				{IP: "10.0.0.8"},
			}, Ports: web},
			{Addresses: []corev1.EndpointAddress{{IP: "FD00:0::0001", Hostname: "v6", NodeName: &node}, {IP: "::ffff:10.0.0.10"}},
				NotReadyAddresses: []corev1.EndpointAddress{{IP: "fd00::3", Hostname: "nr"}},
				Ports:             dns},
			// The ports of the first subset: repacked with it.
			{NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.3", Hostname: "c", TargetRef: podRef("c")}}, Ports: web},
		},
	}
	relabelled := ep.DeepCopy()
	relabelled.Labels = map[string]string{"tier": "x", discovery.LabelSkipMirror: "false"}
	relabelled.Annotations = map[string]string{"team": "b", corev1.LastAppliedConfigAnnotation: `{"kind":"Endpoints","v":2}`,
		corev1.EndpointsLastChangeTriggerTime: "2026-01-02T03:05:05Z"}
	relabelled.Subsets[0].Addresses[0].Hostname = "a2"
	relabelled.Subsets[0].Addresses = slices.Delete(relabelled.Subsets[0].Addresses, 1, 2) // 10.0.0.2 goes, 10.0.0.8 fits
	relabelled.Subsets[2] = corev1.EndpointSubset{Addresses: relabelled.Subsets[2].NotReadyAddresses, Ports: web}
	// Only the annotations upstream does not copy change.
	appliedOnly := relabelled.DeepCopy()
	appliedOnly.Annotations[corev1.LastAppliedConfigAnnotation] = `{"kind":"Endpoints","v":3}`
	appliedOnly.Annotations[corev1.EndpointsLastChangeTriggerTime] = "2026-01-02T03:06:05Z"
	skipped := appliedOnly.DeepCopy()
	skipped.Labels[discovery.LabelSkipMirror] = "true"
	unskipped := appliedOnly.DeepCopy()
	delete(unskipped.Labels, discovery.LabelSkipMirror)

	update := func(ep *corev1.Endpoints) func(c *fake.Clientset) error {
		return func(c *fake.Clientset) error {
			_, err := c.CoreV1().Endpoints("ns").Update(ctx, ep, metav1.UpdateOptions{})
			return err
		}
	}
	endpoints := func(n int) func(slicescenario.Content) bool {
		return func(c slicescenario.Content) bool { return len(c.Endpoints) == n }
	}
	hasLine := func(part string) func(slicescenario.Content) bool {
		return func(c slicescenario.Content) bool {
			return slices.ContainsFunc(c.Slices, func(s string) bool { return strings.Contains(s, part) })
		}
	}
	steps := []struct {
		name string
		do   func(c *fake.Clientset) error
		want func(slicescenario.Content) bool // fairslice's slices once the step has taken effect
	}{
		{"service", func(c *fake.Clientset) error {
			_, err := c.CoreV1().Services("ns").Create(ctx, svc, metav1.CreateOptions{})
			return err
		}, endpoints(0)},
		// The first and third subsets repack into one of 5 ready and 1 not
		// ready addresses, of which 3 (ready) are mirrored; the second's 3 are.
		{"created", func(c *fake.Clientset) error {
			_, err := c.CoreV1().Endpoints("ns").Create(ctx, ep, metav1.CreateOptions{})
			return err
		}, endpoints(6)},
		{"relabelled", update(relabelled), hasLine("tier=x")},
		{"last-applied only", update(appliedOnly), hasLine("tier=x")},
		{"skip-mirror true", update(skipped), endpoints(0)},
		{"skip-mirror removed", update(unskipped), endpoints(6)},
		{"deleted", func(c *fake.Clientset) error {
			return c.CoreV1().Endpoints("ns").Delete(ctx, "ext", metav1.DeleteOptions{})
		}, endpoints(0)},
	}
	for _, step := range steps {
		before := syncCounts(t, up, ours)
		for _, s := range []*mirrorSide{up, ours} {
			if err := step.do(s.client); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
		}
		requireSameMirroredContent(t, step.name, up, ours, before, step.want)
	}
}
