// Package slicerun runs one EndpointSlice reconciliation through upstream's
// Reconciler (k8s.io/endpointslice v0.37.2, with a fake clientset) or
// through fairslice's slicer (via the kube/endpointslice adapter) and
// reports the outcome in the same shape, for the differential test, the
// benchmarks and "fairslice reconcile".
package slicerun

import (
	"context"
	"fmt"
	"io"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	upstream "k8s.io/endpointslice"
	upstreamutil "k8s.io/endpointslice/util"

	"github.com/fairslice/fairslice/kube/internal/slicescenario"
	"github.com/fairslice/fairslice/slicer"
)

// Input is one reconciliation (see slicescenario.Input).
type Input = slicescenario.Input

// Outcome is the result of a reconciliation (see slicescenario.Outcome).
type Outcome = slicescenario.Outcome

// ParseScenario reads a scenario file (see slicescenario.ParseScenario).
func ParseScenario(data []byte) (Input, error) { return slicescenario.ParseScenario(data) }

// WriteScenario writes a scenario file (see slicescenario.WriteScenario).
func WriteScenario(w io.Writer, in Input, comment string) error {
	return slicescenario.WriteScenario(w, in, comment)
}

// Content is what a reconciliation leaves in the slices (see
// slicescenario.Content).
type Content = slicescenario.Content

// ContentOf returns the content of the given slices (see
// slicescenario.ContentOf).
func ContentOf(s []*discovery.EndpointSlice) Content { return slicescenario.ContentOf(s) }

// PlanContent returns the content after plan is applied to existing (see
// slicescenario.PlanContent).
func PlanContent(plan slicer.Plan, existing []*discovery.EndpointSlice) (Content, error) {
	return slicescenario.PlanContent(plan, existing)
}

// Fairslice runs in through fairslice (see slicescenario.Fairslice).
func Fairslice(in Input) (Outcome, slicer.Plan, error) { return slicescenario.Fairslice(in) }

// NodeLister returns a lister over nodes, without an informer.
func NodeLister(nodes []*corev1.Node) corelisters.NodeLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		_ = idx.Add(n)
	}
	return corelisters.NewNodeLister(idx)
}

// NewFakeClient returns a fake clientset holding slices whose creates get
// a name from GenerateName and a counter, as the API server would name
// them, skipping names already taken (by the slices given or earlier
// creates), as the API server's random suffixes do.
func NewFakeClient(slices []*discovery.EndpointSlice) *fake.Clientset {
	objs := make([]runtime.Object, len(slices))
	taken := make(map[string]bool, len(slices))
	for i, s := range slices {
		objs[i] = s.DeepCopy()
		taken[s.Namespace+"/"+s.Name] = true
	}
	// NewSimpleClientset, not NewClientset: its managed-fields tracker is
	// several times slower and changes nothing here.
	client := fake.NewSimpleClientset(objs...)
	n := 0
	client.PrependReactor("create", "endpointslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		s := action.(k8stesting.CreateAction).GetObject().(*discovery.EndpointSlice)
		if s.Name == "" && s.GenerateName != "" {
			ns := action.GetNamespace()
			for {
				n++
				s.Name = fmt.Sprintf("%s%05d", s.GenerateName, n)
				if !taken[ns+"/"+s.Name] {
					break
				}
			}
			taken[ns+"/"+s.Name] = true
			s.GenerateName = ""
		}
		return false, nil, nil
	})
	return client
}

// Upstream runs in through upstream's Reconciler. The error is the one
// Reconcile returns (upstream still writes what it can when it returns
// one, for instance with a pod on a missing node).
func Upstream(in Input) (Outcome, error) {
	client := NewFakeClient(in.Existing)
	r := upstream.NewReconciler(client, NodeLister(in.Nodes), int32(in.Max()), upstreamutil.NewEndpointSliceTracker(),
		nil, &record.FakeRecorder{}, slicer.DefaultControllerName)
	existing := make([]*discovery.EndpointSlice, len(in.Existing))
	for i, s := range in.Existing {
		existing[i] = s.DeepCopy()
	}
	pods := make([]*corev1.Pod, len(in.Pods))
	for i, p := range in.Pods {
		pods[i] = p.DeepCopy()
	}
	err := r.Reconcile(logr.Discard(), in.Service.DeepCopy(), pods, existing, in.TriggerTime)
	var out Outcome
	for _, a := range client.Actions() {
		if a.GetResource().Resource != "endpointslices" {
			continue
		}
		switch a.GetVerb() {
		case "create":
			out.Creates++
		case "update":
			out.Updates++
		case "delete":
			out.Deletes++
		}
	}
	list, lerr := client.DiscoveryV1().EndpointSlices(in.Service.Namespace).List(context.Background(), metav1.ListOptions{})
	if lerr != nil {
		return out, lerr
	}
	out.Lengths = []int{}
	final := make([]*discovery.EndpointSlice, len(list.Items))
	for i := range list.Items {
		out.Lengths = append(out.Lengths, len(list.Items[i].Endpoints))
		final[i] = &list.Items[i]
	}
	out.Content = slicescenario.ContentOf(final)
	slicescenario.SortDesc(out.Lengths)
	return out, err
}
