package pictures

import (
	"fmt"
	"image/color"
	"slices"
	"strconv"

	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ZoneBars is one zone of a hints picture.
type ZoneBars struct {
	Zone string `json:"zone"`
	// Endpoints counts the ready endpoints in the zone.
	Endpoints int `json:"endpoints"`
	// Expected is the zone's share of allocatable CPU times the ready
	// endpoints of all zones; Minimum is Expected / 1.2, the fewest
	// endpoints that keep the zone within the 20% overload threshold.
	Expected float64 `json:"expected"`
	Minimum  float64 `json:"minimum"`
	// Hints counts the ready endpoints hinted for the zone.
	Hints int `json:"hints"`
}

// HintsRun is the outcome of one allocator: what "fairslice hints" prints
// (Enabled, Reason, HintsByZone, CrossZone) and the zones drawn.
type HintsRun struct {
	// Allocator names the run, as "upstream allocator" or "min-cross-zone".
	Allocator string     `json:"allocator"`
	Enabled   bool       `json:"enabled"`
	Reason    string     `json:"reason"`
	CrossZone int        `json:"crossZone"`
	Zones     []ZoneBars `json:"zones"`
}

// HintsData is what a hints picture embeds: the runs side by side.
type HintsData struct {
	Runs []HintsRun `json:"runs"`
}

// NewHintsRun extracts a run's zones from the Service's final slices, the
// zone capacity of its nodes, and the printed outcome's fields.
func NewHintsRun(allocator string, c topology.Capacity, final []*topology.Slice, enabled bool, reason string, hintsByZone map[string]int, crossZone int) HintsRun {
	run := HintsRun{Allocator: allocator, Enabled: enabled, Reason: reason, CrossZone: crossZone}
	ready := map[string]int{}
	total := 0
	for _, s := range final {
		for i := range s.Endpoints {
			if e := &s.Endpoints[i]; e.Conditions.Ready == slicer.True {
				ready[e.Zone]++
				total++
			}
		}
	}
	zones := c.Zones()
	for z := range ready {
		zones = append(zones, z)
	}
	for z := range hintsByZone {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	for _, z := range slices.Compact(zones) {
		want := c.Ratio(z) * float64(total)
		run.Zones = append(run.Zones, ZoneBars{Zone: z, Endpoints: ready[z], Expected: want,
			Minimum: want / (1 + topology.OverloadThreshold), Hints: hintsByZone[z]})
	}
	return run
}

// Hints draws, per zone, the ready endpoints and the hints given against
// the expected share from allocatable CPU and the overload band, one panel
// per run; a run whose hints are off has its reason written on the
// picture.
func Hints(title string, runs ...HintsRun) *Figure {
	fig := &Figure{Title: title, Data: HintsData{Runs: runs}, Height: 420}
	row := make([]*plot.Plot, len(runs))
	fig.Table = [][]string{{"allocator", "zone", "ready endpoints", "expected (CPU share)", "overload minimum", "hints"}}
	ymax := 1.0
	for _, run := range runs {
		for _, z := range run.Zones {
			ymax = max(ymax, float64(z.Endpoints), float64(z.Hints), z.Expected)
		}
	}
	for i, run := range runs {
		p := plot.New()
		state := fmt.Sprintf("hints on, %d hinted to another zone", run.CrossZone)
		if !run.Enabled {
			state = "hints off"
			fig.Notes = append(fig.Notes, run.Allocator+": "+run.Reason)
		}
		p.Title.Text = run.Allocator + ": " + state
		p.Title.TextStyle.Font.Size = 11
		p.Y.Label.Text = "endpoints"
		p.Y.Min, p.Y.Max = 0, ymax*1.45
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.TextStyle.Font.Size = 9
		p.Legend.XOffs = vg.Points(6)
		names := make([]string, len(run.Zones))
		for k, z := range run.Zones {
			names[k] = z.Zone
		}
		p.NominalX(names...)
		addZoneBands(p, run.Zones)
		addZoneBars(p, run.Zones)
		row[i] = p
		for _, z := range run.Zones {
			fig.Table = append(fig.Table, []string{run.Allocator, z.Zone, strconv.Itoa(z.Endpoints),
				fmt.Sprintf("%.2f", z.Expected), fmt.Sprintf("%.2f", z.Minimum), strconv.Itoa(z.Hints)})
		}
	}
	fig.Plots = [][]*plot.Plot{row}
	return fig
}

// addZoneBands shades each zone's overload band, from Minimum to Expected,
// and draws Expected as a line.
func addZoneBands(p *plot.Plot, zones []ZoneBars) {
	band := color.RGBA{0xf6, 0xe2, 0x9c, 0xff}
	for k, z := range zones {
		x0, x1 := float64(k)-0.4, float64(k)+0.4
		poly, _ := plotter.NewPolygon(plotter.XYs{{X: x0, Y: z.Minimum}, {X: x1, Y: z.Minimum}, {X: x1, Y: z.Expected}, {X: x0, Y: z.Expected}})
		poly.Color = band
		poly.LineStyle.Width = 0
		p.Add(poly)
		l, _ := plotter.NewLine(plotter.XYs{{X: x0, Y: z.Expected}, {X: x1, Y: z.Expected}})
		l.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
		p.Add(l)
		if k == 0 {
			p.Legend.Add("expected: CPU share × ready endpoints", l)
			p.Legend.Add("20% overload band (expected/1.2 to expected)", poly)
		}
	}
}

// addZoneBars draws the ready endpoints and the hints of each zone.
func addZoneBars(p *plot.Plot, zones []ZoneBars) {
	const width = 22
	eps, hints := make(plotter.Values, len(zones)), make(plotter.Values, len(zones))
	for k, z := range zones {
		eps[k], hints[k] = float64(z.Endpoints), float64(z.Hints)
	}
	for i, s := range []struct {
		vals  plotter.Values
		color color.Color
		label string
	}{
		{eps, color.RGBA{0x7f, 0x8c, 0x8d, 0xff}, "ready endpoints in the zone"},
		{hints, color.RGBA{0x1f, 0x77, 0xb4, 0xff}, "endpoints hinted for the zone"},
	} {
		b, _ := plotter.NewBarChart(s.vals, width)
		b.Color = s.color
		b.LineStyle.Width = 0
		b.Offset = vg.Points(width * (float64(i) - 0.5))
		p.Add(b)
		p.Legend.Add(s.label, b)
	}
}
