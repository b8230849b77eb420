package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/fairslice/fairslice/fairqueue/scenario"
	"github.com/fairslice/fairslice/kube/tools/pictures"
)

// simulatePictureFlags are simulate's picture flags: --svg, --html and
// --compare.
type simulatePictureFlags struct {
	pictureFlags
	compare *bool
}

func addSimulatePictureFlags(fs *flag.FlagSet) simulatePictureFlags {
	return simulatePictureFlags{
		pictureFlags: addPictureFlags(fs),
		compare:      fs.Bool("compare", false, "with --svg or --html, also run the other engine (fairslice's or upstream's) and draw both runs on the same axes"),
	}
}

// check rejects --compare without a picture to draw it in.
func (p simulatePictureFlags) check(stderr io.Writer) int {
	if *p.compare && !p.wanted() {
		fmt.Fprintln(stderr, "fairslice simulate: --compare needs --svg or --html")
		return exitUsage
	}
	if refuseUpstream(stderr, "simulate", *p.compare) {
		return exitUsage // --compare runs upstream's engine too
	}
	return exitOK
}

// draw writes the picture of a run of s (the results printed, from
// upstream's engine if upstream), with the other engine's run beside it
// if --compare was given.
func (p simulatePictureFlags) draw(name string, s *scenario.Scenario, upstream bool, results []scenario.Result, stderr io.Writer) int {
	return p.write("simulate", func() (*pictures.Figure, error) {
		engines := []string{"fairslice", "upstream"}
		if upstream {
			engines[0], engines[1] = engines[1], engines[0]
		}
		runs := []pictures.SimulationRun{pictures.NewSimulationRun(engines[0], s, results)}
		if *p.compare {
			var other scenario.Engine = upstreamQueueSet()
			if upstream {
				other = scenario.NewEngine()
			}
			res, err := runEngine(s, other)
			if err != nil {
				return nil, err
			}
			runs = append(runs, pictures.NewSimulationRun(engines[1], s, res))
		}
		return pictures.Simulation("fairslice simulate "+filepath.Base(name), runs...), nil
	}, stderr)
}
