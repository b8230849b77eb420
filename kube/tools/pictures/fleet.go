package pictures

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// FleetFlow is one flow of a fleet picture: its share of the fleet's
// seat-seconds and its max-min fair share.
type FleetFlow struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	Share     float64 `json:"share"`
	FairShare float64 `json:"fairShare"`
}

// FleetRun is one "fairslice fleet" run.
type FleetRun struct {
	// Label names the run ("uncoordinated", "coordinated").
	Label    string      `json:"label"`
	Replicas int         `json:"replicas"`
	Balancer string      `json:"balancer"`
	GoAway   string      `json:"goaway"`
	Jain     float64     `json:"jain"`
	Flows    []FleetFlow `json:"flows"`
}

// FleetData is what a fleet picture embeds: the runs side by side.
type FleetData struct {
	Runs []FleetRun `json:"runs"`
}

// Fleet draws, per flow, its share beside its fair share, one panel per
// run, on one scale.
func Fleet(title string, runs ...FleetRun) *Figure {
	fig := &Figure{Title: title, Data: FleetData{Runs: runs}, Height: 420}
	fig.Table = [][]string{{"run", "flow", "kind", "share", "fair share"}}
	ymax := 0.0
	for _, run := range runs {
		for _, f := range run.Flows {
			ymax = max(ymax, f.Share, f.FairShare)
		}
	}
	row := make([]*plot.Plot, len(runs))
	for i, run := range runs {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: %d replicas, %s, GOAWAY %s, Jain %.3f", run.Label, run.Replicas, run.Balancer, run.GoAway, run.Jain)
		p.Title.TextStyle.Font.Size = 11
		p.Y.Label.Text = "share of the fleet's seat-seconds"
		p.Y.Min, p.Y.Max = 0, max(ymax, 0.01)*1.35
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.TextStyle.Font.Size = 9
		names := make([]string, len(run.Flows))
		share, fair := make(plotter.Values, len(run.Flows)), make(plotter.Values, len(run.Flows))
		for k, f := range run.Flows {
			names[k], share[k], fair[k] = f.Name, f.Share, f.FairShare
			fig.Table = append(fig.Table, []string{run.Label, f.Name, f.Kind, fmt.Sprintf("%.4f", f.Share), fmt.Sprintf("%.4f", f.FairShare)})
		}
		p.NominalX(names...)
		const width = 14
		for j, s := range []struct {
			vals  plotter.Values
			color color.Color
			label string
		}{
			{fair, color.RGBA{0x7f, 0x8c, 0x8d, 0xff}, "max-min fair share"},
			{share, color.RGBA{0x1f, 0x77, 0xb4, 0xff}, "share"},
		} {
			b, err := plotter.NewBarChart(s.vals, width)
			if err != nil {
				continue // no flows: nothing to draw
			}
			b.Color = s.color
			b.LineStyle.Width = 0
			b.Offset = vg.Points(width * (float64(j) - 0.5))
			p.Add(b)
			p.Legend.Add(s.label, b)
		}
		row[i] = p
	}
	fig.Plots = [][]*plot.Plot{row}
	return fig
}
