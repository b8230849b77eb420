// Package slicescenario holds one EndpointSlice reconciliation as plain
// k8s.io/api objects (a Service, its Pods, the Nodes, the existing slices),
// its scenario-file format, and the run through fairslice's adapter and
// slicer. It links no upstream controller code, so the light fairslice
// binary can use it; kube/internal/upstream/slicerun adds the run through upstream's
// Reconciler.
package slicescenario

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/kube/internal/kubescenario"
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

// Max is the slice capacity of the reconciliation: MaxEndpointsPerSlice, or
// the default 100 for 0.
func (in *Input) Max() int {
	if in.MaxEndpointsPerSlice == 0 {
		return slicer.DefaultMaxEndpointsPerSlice
	}
	return in.MaxEndpointsPerSlice
}

// Fairslice runs in through the adapter and the slicer. The error joins
// the adapter's per-pod problems (the plan still covers the other pods)
// and any failure of the slicer (then the outcome is empty).
func Fairslice(in Input) (Outcome, slicer.Plan, error) {
	var conv adapter.Converter
	desired, derr := conv.Desired(in.Service, in.Pods, kubescenario.NodesOf(in.Nodes))
	existing, err := conv.Existing(in.Existing)
	if err != nil {
		return Outcome{}, slicer.Plan{}, err
	}
	plan, err := slicer.Reconcile(adapter.ServiceFacts(in.Service, in.TriggerTime), desired, existing,
		slicer.Options{MaxEndpointsPerSlice: in.Max()})
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
	SortDesc(out)
	return out
}

// SortDesc sorts s largest first.
func SortDesc(s []int) { slices.SortFunc(s, func(a, b int) int { return cmp.Compare(b, a) }) }
