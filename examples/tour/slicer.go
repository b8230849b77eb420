package main

import (
	"fmt"
	"io"

	"github.com/fairslice/fairslice/slicer/propagation"
)

// slicerSection prints KEP-0752's two cases from the propagation
// simulator: the bytes a rolling update writes and sends to every node
// with one Endpoints object, slices of 100 and slices of 1, sized as the
// API server encodes them.
func slicerSection(w io.Writer) error {
	for i, c := range []propagation.Config{{Pods: 20000, Nodes: 5000}, {Pods: 20, Nodes: 10}} {
		if i > 0 {
			fmt.Fprintln(w)
		}
		r, err := propagation.Simulate(c)
		if err != nil {
			return err
		}
		if err := r.WriteTable(w); err != nil {
			return err
		}
	}
	return nil
}
