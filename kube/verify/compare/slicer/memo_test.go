package slicercompare

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/kube/internal/upstream/slicerun"
	"github.com/fairslice/fairslice/slicer"
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
			fe, ferr := fresh.Existing(in.Existing)
			le, lerr := long.Existing(in.Existing)
			if ferr != nil || lerr != nil {
				t.Fatal(ferr, lerr)
			}
			if diff := cmp.Diff(fe, le, cmpopts.EquateEmpty()); diff != "" {
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

// TestSyncerMemo checks that a Syncer, which remembers its last no-op
// sync, plans exactly like a fresh Converter and Reconciler through a
// sequence of syncs: plans applied (so that the next sync is usually a
// no-op), repeated unchanged, pods listed in another order or repeated,
// and pods, nodes, slices and the Service replaced informer style.
func TestSyncerMemo(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for i := range 100 {
		in := randomScenario(rng)
		opts := slicer.Options{MaxEndpointsPerSlice: in.MaxEndpointsPerSlice}
		s, err := endpointslice.NewSyncer(opts)
		if err != nil {
			t.Fatal(err)
		}
		for step := range 12 {
			nodes := slicerun.NodeLister(in.Nodes)
			facts := endpointslice.ServiceFacts(in.Service, time.Time{})
			var fresh endpointslice.Converter
			core, _ := slicer.NewReconciler(opts)
			desired, wantSkipped := fresh.Desired(in.Service, in.Pods, nodes)
			// (Node lookups here fail only with NotFound: pods are
			// skipped, never the whole conversion.)
			fe, err := fresh.Existing(in.Existing)
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := core.Reconcile(facts, desired, fe)
			got, gotSkipped, gotErr := s.Plan(facts, in.Service, in.Pods, nodes, in.Existing)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("scenario %d step %d: Syncer plan differs (-fresh +syncer):\n%s", i, step, diff)
			}
			if (wantErr == nil) != (gotErr == nil) || (wantSkipped == nil) != (gotSkipped == nil) {
				t.Fatalf("scenario %d step %d: errors %v, %v; want %v, %v", i, step, gotSkipped, gotErr, wantSkipped, wantErr)
			}
			switch rng.IntN(8) {
			case 0, 1, 2: // apply the plan
				if wantErr == nil {
					in.Existing = applyPlan(want, in.Existing, step)
				}
			case 3: // the same inputs again
			case 4: // another listing order
				in.Pods = slices.Clone(in.Pods)
				rng.Shuffle(len(in.Pods), func(a, b int) { in.Pods[a], in.Pods[b] = in.Pods[b], in.Pods[a] })
			case 5: // a pod listed twice in place of another
				if len(in.Pods) > 1 {
					in.Pods = slices.Clone(in.Pods)
					in.Pods[0] = in.Pods[1]
				}
			case 6:
				if len(in.Pods) > 0 {
					in.Pods = slices.Clone(in.Pods)
					k := rng.IntN(len(in.Pods))
					p := in.Pods[k].DeepCopy()
					mutatePod(rng, p)
					in.Pods[k] = p
				}
			default:
				switch rng.IntN(3) {
				case 0:
					k := rng.IntN(len(in.Nodes))
					in.Nodes = slices.Clone(in.Nodes)
					n := in.Nodes[k].DeepCopy()
					n.Labels = map[string]string{corev1.LabelTopologyZone: "zone-new"}
					in.Nodes[k] = n
				case 1:
					svc := in.Service.DeepCopy()
					svc.Labels = map[string]string{"tier": fmt.Sprint(step)}
					in.Service = svc
				default:
					if len(in.Existing) > 0 {
						in.Existing = slices.Clone(in.Existing)
						in.Existing[rng.IntN(len(in.Existing))] = in.Existing[0].DeepCopy()
					}
				}
			}
		}
	}
}

// applyPlan returns the slices after the plan's calls, as an informer
// would list them: unchanged slices keep their objects, written ones are
// new objects, creates get names.
func applyPlan(plan slicer.Plan, existing []*discovery.EndpointSlice, step int) []*discovery.EndpointSlice {
	byName := make(map[string]*discovery.EndpointSlice)
	for _, s := range existing {
		byName[s.Name] = s
	}
	var out []*discovery.EndpointSlice
	for _, s := range plan.Unchanged {
		out = append(out, byName[s.Name])
	}
	for _, s := range plan.Updates {
		out = append(out, endpointslice.ToEndpointSlice(s))
	}
	for i, s := range plan.Creates {
		o := endpointslice.ToEndpointSlice(s)
		o.Name = fmt.Sprintf("%sstep%d-%d", o.GenerateName, step, i)
		out = append(out, o)
	}
	return out
}

// TestSyncerFromMemory drives Syncers to a no-op sync and then replaces a
// few pods (readiness flips, deletions, new IPs, labels), with a new
// trigger time each sync: every plan, whether made from the remembered
// no-op or in full, must be the fresh path's.
func TestSyncerFromMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for i := range 300 {
		in := randomScenario(rng)
		opts := slicer.Options{MaxEndpointsPerSlice: in.MaxEndpointsPerSlice, Compact: i%2 == 1}
		s, err := endpointslice.NewSyncer(opts)
		if err != nil {
			t.Fatal(err)
		}
		for step := range 16 {
			nodes := slicerun.NodeLister(in.Nodes)
			facts := endpointslice.ServiceFacts(in.Service, time.Date(2026, 12, 2, 0, 0, step, 0, time.UTC))
			var fresh endpointslice.Converter
			core, _ := slicer.NewReconciler(opts)
			desired, wantSkipped := fresh.Desired(in.Service, in.Pods, nodes)
			fe, err := fresh.Existing(in.Existing)
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := core.Reconcile(facts, desired, fe)
			got, gotSkipped, gotErr := s.Plan(facts, in.Service, in.Pods, nodes, in.Existing)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("scenario %d step %d: Syncer plan differs (-fresh +syncer):\n%s", i, step, diff)
			}
			if (wantErr == nil) != (gotErr == nil) || (wantSkipped == nil) != (gotSkipped == nil) {
				t.Fatalf("scenario %d step %d: errors %v, %v; want %v, %v", i, step, gotSkipped, gotErr, wantSkipped, wantErr)
			}
			if wantErr == nil && want.Writes() > 0 && rng.IntN(3) > 0 {
				in.Existing = applyPlan(want, in.Existing, step)
				continue
			}
			if len(in.Pods) == 0 {
				continue
			}
			in.Pods = slices.Clone(in.Pods)
			for range 1 + rng.IntN(3) {
				k := rng.IntN(len(in.Pods))
				p := in.Pods[k].DeepCopy()
				switch rng.IntN(4) {
				case 0:
					mutatePod(rng, p)
				case 1:
					p.Labels = map[string]string{"rev": fmt.Sprint(step)}
				default:
					setReady(p, rng.IntN(2) == 0)
				}
				in.Pods[k] = p
			}
		}
	}
}
