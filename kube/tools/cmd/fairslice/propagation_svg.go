package main

import (
	"io"

	"github.com/fairslice/fairslice/kube/tools/pictures"
	"github.com/fairslice/fairslice/slicer/propagation"
)

// drawPropagation writes the picture of propagation.Simulate over
// pictures.PodSweep(r's pods), r being the report printed.
func (p pictureFlags) drawPropagation(r propagation.Report, stderr io.Writer) int {
	return p.write("propagation", func() (*pictures.Figure, error) {
		var reports []propagation.Report
		for _, pods := range pictures.PodSweep(r.Config.Pods) {
			rep := r
			if pods != r.Config.Pods {
				var err error
				if rep, err = propagation.Simulate(propagation.Config{Pods: pods, Nodes: r.Config.Nodes}); err != nil {
					return nil, err
				}
			}
			reports = append(reports, rep)
		}
		d, err := pictures.NewPropagationData(reports)
		if err != nil {
			return nil, err
		}
		return pictures.Propagation(d), nil
	}, stderr)
}
