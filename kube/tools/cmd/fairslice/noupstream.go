//go:build !upstream

package main

import (
	"github.com/fairslice/fairslice/fairqueue/scenario"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/kube/internal/kubescenario"
	"github.com/fairslice/fairslice/kube/internal/slicescenario"
	"github.com/fairslice/fairslice/topology"
)

// The light build: --upstream is refused with errNoUpstream (exit status
// 2) before any of these is called. upstream.go has the real ones.

const upstreamBuilt = false

func upstreamClassifier(*flowschema.Config, int) (func(*flowschema.Request) classification, func(), error) {
	return nil, nil, errNoUpstream
}

func upstreamQueueSet() scenario.Engine { return nil }

func upstreamHints(*kubescenario.Scenario) (kubescenario.Outcome, []*topology.Slice, error, error) {
	return kubescenario.Outcome{}, nil, nil, errNoUpstream
}

func upstreamReconcile(slicescenario.Input) (slicescenario.Outcome, error) {
	return slicescenario.Outcome{}, errNoUpstream
}
