package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/fairslice/fairslice/kube/internal/kubescenario"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/kube/tools/pictures"
	"github.com/fairslice/fairslice/topology"
)

// drawHints writes the picture of sc's hints with upstream's allocator
// (Kubernetes' own code if upstream) beside fairslice's min-cross-zone
// one, each run through reconcileScenario as "fairslice hints" runs it.
func (p pictureFlags) drawHints(name string, sc *kubescenario.Scenario, upstream bool, stderr io.Writer) int {
	return p.write("hints", func() (*pictures.Figure, error) {
		capacity := adapter.CapacityFromAPI(sc.Nodes)
		left := "upstream allocator"
		if upstream {
			left = "Kubernetes' code"
		}
		var runs []pictures.HintsRun
		for _, r := range []struct {
			name     string
			upstream bool
			opts     topology.Options
		}{
			{left, upstream, topology.Options{}},
			{"min-cross-zone allocator", false, topology.Options{Allocator: topology.AllocatorMinCrossZone}},
		} {
			out, final, code := reconcileScenario("hints", sc, r.upstream, r.opts, io.Discard)
			if code != exitOK {
				return nil, fmt.Errorf("the %s run failed", r.name)
			}
			runs = append(runs, pictures.NewHintsRun(r.name, capacity, final, out.Enabled, out.Reason, out.HintsByZone, out.CrossZone))
		}
		return pictures.Hints("fairslice hints "+filepath.Base(name), runs...), nil
	}, stderr)
}
