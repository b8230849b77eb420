package main

import (
	"io"

	"github.com/fairslice/fairslice/kube/tools/pictures"
)

// drawOdds writes the picture of the odds table printed: its cells as
// points, with a curve over hand sizes for each deck.
func (p pictureFlags) drawOdds(table []oddsRow, stderr io.Writer) int {
	return p.write("odds", func() (*pictures.Figure, error) {
		var points []pictures.OddsPoint
		for _, r := range table {
			for i, e := range r.Elephants {
				points = append(points, pictures.OddsPoint{Queues: r.Queues, Hand: r.Hand, Elephants: e, Probability: r.Probabilities[i]})
			}
		}
		return pictures.Odds(pictures.NewOddsData(points)), nil
	}, stderr)
}
