//go:build upstream

package main

import (
	"errors"
	"fmt"

	"github.com/fairslice/fairslice/fairqueue/scenario"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/kube/internal/kubescenario"
	"github.com/fairslice/fairslice/kube/internal/slicescenario"
	"github.com/fairslice/fairslice/kube/internal/upstream/slicerun"
	"github.com/fairslice/fairslice/kube/internal/upstream/upstreamfs"
	"github.com/fairslice/fairslice/kube/internal/upstream/upstreamqs"
	"github.com/fairslice/fairslice/kube/internal/upstream/upstreamtopo"
	"github.com/fairslice/fairslice/topology"
)

// The --upstream modes, built with -tags upstream: they link Kubernetes'
// own APF controller, QueueSet and EndpointSlice reconciler (about 1,000
// packages). noupstream.go has the light stand-ins.

// upstreamBuilt reports whether this binary has the --upstream modes.
const upstreamBuilt = true

// upstreamClassifier starts upstream's APF controller on cfg; stop ends it.
func upstreamClassifier(cfg *flowschema.Config, serverConcurrency int) (classify func(*flowschema.Request) classification, stop func(), err error) {
	o, err := upstreamfs.Start(cfg, serverConcurrency)
	if err != nil {
		return nil, nil, err
	}
	return func(r *flowschema.Request) classification {
		d := o.Classify(r)
		return classification{FlowSchema: d.FlowSchema, PriorityLevel: d.PriorityLevel, Distinguisher: d.Distinguisher}
	}, o.Close, nil
}

// upstreamQueueSet returns an engine running upstream's QueueSet.
func upstreamQueueSet() scenario.Engine { return upstreamqs.New() }

// upstreamHints reconciles sc through upstream's reconciler and topology
// cache; reconcileErr is the reconciler's own error (it still writes what
// it can).
func upstreamHints(sc *kubescenario.Scenario) (out kubescenario.Outcome, slices []*topology.Slice, reconcileErr, err error) {
	run, err := upstreamtopo.Reconcile(sc)
	if err != nil {
		return kubescenario.Outcome{}, nil, nil, err
	}
	return run.Outcome, run.Slices, run.Err, nil
}

// upstreamReconcile runs upstream's Reconciler, turning a panic on odd
// input into an error.
func upstreamReconcile(in slicescenario.Input) (out slicescenario.Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errors.Join(err, fmt.Errorf("upstream panicked: %v", p))
		}
	}()
	return slicerun.Upstream(in)
}
