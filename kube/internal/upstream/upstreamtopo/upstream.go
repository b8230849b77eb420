// Package upstreamtopo runs upstream's EndpointSlice reconciler
// (k8s.io/endpointslice v0.37.2) with its topology cache on a topology
// scenario, as driving-upstream.md §4-5 describe: a fake clientset whose
// create reactor fills in GenerateName, a node lister over a plain
// indexer, SetNodes called before Reconcile, and a fake event recorder.
package upstreamtopo

import (
	"fmt"
	"strings"
	"time"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/kube/internal/kubescenario"
	"github.com/fairslice/fairslice/topology"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/endpointslice"
	"k8s.io/endpointslice/topologycache"
	endpointsliceutil "k8s.io/endpointslice/util"
)

// Run is a scenario reconciled by upstream.
type Run struct {
	Outcome kubescenario.Outcome
	// Slices are the slices upstream created, converted to the core's type.
	Slices []*topology.Slice
	// API are the same slices as upstream wrote them.
	API    []*discovery.EndpointSlice
	Events []topology.Event
	// Err is the reconciler's error (for example a pod on an unknown node);
	// upstream still writes the slices it can.
	Err error
}

// Reconcile reconciles sc's Service from no existing slices through
// upstream's Reconciler with a TopologyCache and the PreferSame traffic
// distributions enabled.
func Reconcile(sc *kubescenario.Scenario) (*Run, error) {
	client := fake.NewClientset()
	n := 0
	client.PrependReactor("create", "endpointslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		s := action.(k8stesting.CreateAction).GetObject().(*discovery.EndpointSlice)
		if s.Name == "" && s.GenerateName != "" {
			n++
			s.Name = fmt.Sprintf("%s%05d", s.GenerateName, n)
			s.GenerateName = ""
		}
		return false, nil, nil
	})
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, node := range sc.Nodes {
		if err := idx.Add(node); err != nil {
			return nil, err
		}
	}
	tc := topologycache.NewTopologyCache()
	logger := logr.Discard()
	tc.SetNodes(logger, sc.Nodes)
	recorder := record.NewFakeRecorder(1000)
	r := endpointslice.NewReconciler(client, corelisters.NewNodeLister(idx), 100, endpointsliceutil.NewEndpointSliceTracker(),
		tc, recorder, "endpointslice-controller.k8s.io", endpointslice.WithPreferSameTrafficDistributionEnabled(true))
	svc := sc.Service.DeepCopy()
	if svc.UID == "" {
		svc.UID = "scenario-uid"
	}
	pods := make([]*corev1.Pod, len(sc.Pods))
	for i, p := range sc.Pods {
		pods[i] = p.DeepCopy()
	}
	run := &Run{}
	run.Err = r.Reconcile(logger, svc, pods, nil, time.Unix(0, 0))
	for _, a := range client.Actions() {
		if a.GetResource().Resource != "endpointslices" {
			continue
		}
		if v := a.GetVerb(); v != "create" && v != "update" {
			continue
		}
		s := a.(interface{ GetObject() runtime.Object }).GetObject().(*discovery.EndpointSlice)
		run.API = append(run.API, s)
		run.Slices = append(run.Slices, adapter.SliceFromAPI(s))
	}
	close(recorder.Events)
	for ev := range recorder.Events {
		run.Events = append(run.Events, ParseEvent(ev))
	}
	run.Outcome = kubescenario.Summarize(run.Slices, run.Events)
	return run, nil
}

// ParseEvent splits a FakeRecorder event string ("Type Reason Message").
func ParseEvent(s string) topology.Event {
	typ, rest, _ := strings.Cut(s, " ")
	reason, msg, _ := strings.Cut(rest, " ")
	return topology.Event{Type: typ, Reason: reason, Message: msg}
}
