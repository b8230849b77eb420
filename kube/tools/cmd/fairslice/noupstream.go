//go:build !upstream

package main

import (
	"github.com/fairslice/fairslice/fairqueue/scenario"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/kube/internal/slicescenario"
	ktopo "github.com/fairslice/fairslice/kube/topology"
	"github.com/fairslice/fairslice/topology"
)

// The light build: --upstream is refused with errNoUpstream (exit status
// 2) before any of these is called. upstream.go has the real ones.

const upstreamBuilt = false

func upstreamClassifier(*flowschema.Config, int) (func(*flowschema.Request) classification, func(), error) {
	return nil, nil, errNoUpstream
}

func upstreamQueueSet() scenario.Engine { return nil }

func upstreamHints(*ktopo.Scenario) (ktopo.Outcome, []*topology.Slice, error, error) {
	return ktopo.Outcome{}, nil, nil, errNoUpstream
}

func upstreamReconcile(slicescenario.Input) (slicescenario.Outcome, error) {
	return slicescenario.Outcome{}, errNoUpstream
}
