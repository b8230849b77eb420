package topology

import (
	"time"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Outcome is what fairslice hints prints for a Service.
type Outcome struct {
	// Enabled is whether some ready endpoint carries a zone hint.
	Enabled bool `json:"enabled"`
	// Reason is upstream's TopologyAwareHintsDisabled event message when
	// hints are off, with its ", addressType: X" suffix, and "" otherwise.
	Reason string `json:"reason"`
	// HintsByZone counts ready endpoints hinted for each zone (an endpoint
	// hinted for two zones counts for both); zones with none are left out.
	HintsByZone map[string]int `json:"hintsByZone"`
	// CrossZone counts ready endpoints hinted for a zone other than their
	// own.
	CrossZone int `json:"crossZone"`
}

// Summarize computes the Outcome of a Service's final slices and the
// events recorded while writing them. Ready is read as the EndpointSlice
// controller reads it (unset is not ready).
func Summarize(slices []*topology.Slice, events []topology.Event) Outcome {
	o := Outcome{HintsByZone: map[string]int{}}
	for _, s := range slices {
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if e.Conditions.Ready != slicer.True || e.Hints == nil || len(e.Hints.ForZones) == 0 {
				continue
			}
			cross := false
			for _, z := range e.Hints.ForZones {
				o.HintsByZone[z]++
				cross = cross || z != e.Zone
			}
			if cross {
				o.CrossZone++
			}
		}
	}
	o.Enabled = len(o.HintsByZone) > 0
	if !o.Enabled {
		for _, ev := range events {
			if ev.Type == corev1.EventTypeWarning {
				o.Reason = ev.Message
			}
		}
	}
	return o
}

// Run is a scenario reconciled by fairslice.
type Run struct {
	Outcome Outcome
	// Slices are the Service's slices after the sync (creates, updates and
	// unchanged).
	Slices []*topology.Slice
	// Events are the topology events of the sync.
	Events []topology.Event
	// Problems reports pods left out of the endpoints (a missing node, an
	// unparsable IP), as kube/adapter.Converter.Desired reports them;
	// nil if none.
	Problems error
	// Capacity is the zone capacity from the scenario's nodes.
	Capacity topology.Capacity
}

// nodeGetter looks the scenario's nodes up by name.
type nodeGetter map[string]*corev1.Node

func (g nodeGetter) Get(name string) (*corev1.Node, error) {
	if n, ok := g[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("node"), name)
}

// RunScenario reconciles sc's Service from no existing slices, as
// kube-controller-manager v1.37 would with the PreferSame traffic
// distributions enabled: pods to endpoints (kube/endpointslice), the
// slicer's plan, then topology.HintPlan with opts.
func RunScenario(sc *Scenario, opts topology.Options) (*Run, error) {
	nodes, err := NodesFromAPI(sc.Nodes)
	if err != nil {
		return nil, err
	}
	getter := nodeGetter{}
	for _, n := range sc.Nodes {
		getter[n.Name] = n
	}
	var conv adapter.Converter
	groups, problems := conv.Desired(sc.Service, sc.Pods, getter)
	if groups == nil && problems != nil {
		return nil, problems
	}
	svc := adapter.ServiceFacts(sc.Service, time.Time{})
	svc.TopologyHints = true
	if svc.UID == "" {
		svc.UID = "scenario-uid"
	}
	plan, err := slicer.Reconcile(svc, groups, nil, slicer.Options{})
	if err != nil {
		return nil, err
	}
	run := &Run{Capacity: topology.NewCapacity(nodes), Problems: problems}
	results, _ := topology.HintPlan(run.Capacity, &plan, svc.TriggerTime, PolicyForService(sc.Service, true), opts)
	for _, r := range results {
		run.Events = append(run.Events, r.Events...)
	}
	for _, list := range [][]slicer.Slice{plan.Creates, plan.Updates, plan.Unchanged} {
		for i := range list {
			run.Slices = append(run.Slices, &list[i])
		}
	}
	run.Outcome = Summarize(run.Slices, run.Events)
	return run, nil
}
