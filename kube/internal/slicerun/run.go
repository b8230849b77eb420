// Package slicerun runs one EndpointSlice reconciliation through upstream's
// Reconciler (k8s.io/endpointslice v0.37.2, with a fake clientset) or
// through fairslice's slicer (via the kube/endpointslice adapter) and
// reports the outcome in the same shape, for the differential test, the
// benchmarks and "fairslice reconcile".
package slicerun

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

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

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/slicer"
)

// Input is one reconciliation: a Service, the pods its selector matches,
// the nodes, the existing slices, and the options.
type Input struct {
	Service              *corev1.Service
	Pods                 []*corev1.Pod
	Nodes                []*corev1.Node
	Existing             []*discovery.EndpointSlice
	MaxEndpointsPerSlice int // 0 is 100
	TriggerTime          time.Time
}

// Outcome is what "fairslice reconcile" prints: the API calls issued and
// the endpoint counts of the Service's slices afterwards, largest first (a
// placeholder counts as 0).
type Outcome struct {
	Creates int   `json:"creates"`
	Updates int   `json:"updates"`
	Deletes int   `json:"deletes"`
	Lengths []int `json:"lengths"`
	// Content is what the Service's slices hold afterwards (not printed).
	Content Content `json:"-"`
}

func (in *Input) max() int {
	if in.MaxEndpointsPerSlice == 0 {
		return slicer.DefaultMaxEndpointsPerSlice
	}
	return in.MaxEndpointsPerSlice
}

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
	r := upstream.NewReconciler(client, NodeLister(in.Nodes), int32(in.max()), upstreamutil.NewEndpointSliceTracker(),
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
	out.Content = ContentOf(final)
	sortDesc(out.Lengths)
	return out, err
}

// Fairslice runs in through the adapter and the slicer. The error joins
// the adapter's per-pod problems (the plan still covers the other pods)
// and any failure of the slicer (then the outcome is empty).
func Fairslice(in Input) (Outcome, slicer.Plan, error) {
	var conv endpointslice.Converter
	desired, derr := conv.Desired(in.Service, in.Pods, NodeLister(in.Nodes))
	existing, err := conv.Existing(in.Existing)
	if err != nil {
		return Outcome{}, slicer.Plan{}, err
	}
	plan, err := slicer.Reconcile(endpointslice.ServiceFacts(in.Service, in.TriggerTime), desired, existing,
		slicer.Options{MaxEndpointsPerSlice: in.max()})
	if err != nil {
		return Outcome{}, plan, err
	}
	out := Outcome{Creates: len(plan.Creates), Updates: len(plan.Updates), Deletes: len(plan.Deletes), Lengths: Lengths(plan, existing)}
	if out.Content, err = PlanContent(plan, in.Existing); err != nil {
		return Outcome{}, plan, err
	}
	return out, plan, derr
}

// Lengths returns the endpoint counts of the slices after plan is applied
// to existing, largest first.
func Lengths(plan slicer.Plan, existing []slicer.Slice) []int {
	final := map[string]int{}
	for _, s := range existing {
		final[s.Name] = len(s.Endpoints)
	}
	for _, s := range plan.Deletes {
		delete(final, s.Name)
	}
	for _, s := range plan.Updates {
		final[s.Name] = len(s.Endpoints)
	}
	out := []int{}
	for _, n := range final {
		out = append(out, n)
	}
	for _, s := range plan.Creates {
		out = append(out, len(s.Endpoints))
	}
	sortDesc(out)
	return out
}

func sortDesc(s []int) { slices.SortFunc(s, func(a, b int) int { return cmp.Compare(b, a) }) }
