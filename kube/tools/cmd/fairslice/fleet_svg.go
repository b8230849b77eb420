package main

import (
	"io"

	"github.com/fairslice/fairslice/kube/tools/pictures"
)

// drawFleet writes the picture of the fleet report r, run with flags ff:
// each flow's share against its fair share, without coordination (left)
// and with it (right); the other run is simulated here.
func (p pictureFlags) drawFleet(ff fleetFlags, r fleetReport, stderr io.Writer) int {
	return p.write("fleet", func() (*pictures.Figure, error) {
		ff.coordinate = !ff.coordinate
		other, err := ff.run()
		if err != nil {
			return nil, err
		}
		runs := []pictures.FleetRun{fleetRunOf(r), fleetRunOf(other)}
		if r.Coordinate {
			runs[0], runs[1] = runs[1], runs[0]
		}
		return pictures.Fleet("fairslice fleet", runs...), nil
	}, stderr)
}

// fleetRunOf is the picture's run for r.
func fleetRunOf(r fleetReport) pictures.FleetRun {
	run := pictures.FleetRun{Label: "uncoordinated", Jain: r.Jain, Replicas: r.Replicas, Balancer: r.Balancer, GoAway: r.GoAway, Flows: r.Flows}
	if r.Coordinate {
		run.Label = "coordinated"
	}
	return run
}
