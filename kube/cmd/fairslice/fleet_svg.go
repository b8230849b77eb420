package main

import (
	"io"

	"github.com/fairslice/fairslice/kube/pictures"
)

// drawFleet writes the picture of the fleet report r: each flow's share
// against its fair share.
func (p pictureFlags) drawFleet(r fleetReport, stderr io.Writer) int {
	return p.write("fleet", func() (*pictures.Figure, error) {
		return pictures.Fleet("fairslice fleet", fleetRunOf(r)), nil
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
