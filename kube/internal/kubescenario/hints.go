package kubescenario

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
)

// ReadHints reads the scenario of the hints and route commands: Read of
// a Service, Nodes and Pods, then two pods with one IP are an error, the
// Service's namespace defaults to "default" and the pods' to the
// Service's.
func ReadHints(objs []Object) (*Scenario, error) {
	sc, err := Read(objs, KindService, KindNode, KindPod)
	if err != nil {
		return nil, err
	}
	if err := checkPodIPs(sc.Pods); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if sc.Service.Namespace == "" {
		sc.Service.Namespace = "default"
	}
	for _, p := range sc.Pods {
		if p.Namespace == "" {
			p.Namespace = sc.Service.Namespace
		}
	}
	return sc, nil
}

// ParseHints is ReadHints of the objects of data, an input without a
// name.
func ParseHints(data []byte) (*Scenario, error) {
	objs, err := Objects("", data)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return ReadHints(objs)
}

// checkPodIPs rejects two pods with the same IP: the scenario would publish
// one address twice.
func checkPodIPs(pods []*corev1.Pod) error {
	seen := map[string]string{}
	var errs []error
	for _, p := range pods {
		for i, ip := range p.Status.PodIPs {
			if other, ok := seen[ip.IP]; ok && other != p.Name {
				errs = append(errs, fmt.Errorf("pod %q: status.podIPs[%d]: %s is also the IP of pod %q", p.Name, i, ip.IP, other))
				continue
			}
			seen[ip.IP] = p.Name
		}
	}
	return errors.Join(errs...)
}

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

// Run is a hints scenario reconciled by fairslice.
type Run struct {
	Outcome Outcome
	// Slices are the Service's slices after the sync (creates, updates and
	// unchanged).
	Slices []*topology.Slice
	// Events are the topology events of the sync.
	Events []topology.Event
	// Problems reports pods left out of the endpoints (a missing node, an
	// unparsable IP), as adapter.Converter.Desired reports them; nil if
	// none.
	Problems error
	// Capacity is the zone capacity from the scenario's nodes.
	Capacity topology.Capacity
}

// RunHints reconciles sc's Service from no existing slices, as
// kube-controller-manager v1.37 would with the PreferSame traffic
// distributions enabled, through the same conversions as
// kube/endpointslice's controller: pods to endpoints and nodes to capacity
// (package adapter), the slicer's plan, then topology.HintPlan with opts.
func RunHints(sc *Scenario, opts topology.Options) (*Run, error) {
	var conv adapter.Converter
	groups, problems := conv.Desired(sc.Service, sc.Pods, NodesOf(sc.Nodes))
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
	run := &Run{Capacity: adapter.CapacityFromAPI(sc.Nodes), Problems: problems}
	policy, _ := adapter.PolicyForService(sc.Service)
	results, _ := topology.HintPlan(run.Capacity, &plan, svc.TriggerTime, policy, opts)
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
