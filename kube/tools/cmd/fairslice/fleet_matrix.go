package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/fairslice/fairslice/internal/fleetsim"
)

// matrixCell is one scenario of the steering matrix: every pinned flow on
// replica 0, light flows and at most one spread flow everywhere, behind a
// balancer that keeps each client's connection (only a GOAWAY moves it).
type matrixCell struct {
	Replicas, Pinned, Light int
	Spread                  bool
	Seed                    uint64
}

// steeringMatrix is the scenarios the steering is judged on: 3 to 5
// replicas, 1 to 4 heavy clients pinned to one replica, 0 to 8 light
// flows, with and without a spread flow, each on its own seed.
var steeringMatrix = []matrixCell{
	{3, 3, 3, false, 1}, {3, 2, 6, false, 5}, {3, 2, 6, true, 5}, {4, 1, 0, false, 2}, {4, 4, 8, true, 3},
	{5, 2, 4, false, 4}, {5, 3, 0, true, 6}, {4, 2, 2, true, 7}, {5, 4, 8, false, 8}, {3, 1, 8, true, 9},
}

// steering is one GOAWAY setting the matrix compares.
type steering struct {
	Name   string
	mode   fleetsim.GoAwayMode
	chance float64
}

var steerings = []steering{
	{"off", fleetsim.GoAwayOff, fleetsim.UpstreamGoAwayChance},
	{"random 0.001", fleetsim.GoAwayRandom, 0.001},
	{"random 0.02", fleetsim.GoAwayRandom, 0.02},
	{"targeted", fleetsim.GoAwayTargeted, fleetsim.UpstreamGoAwayChance},
}

// matrixRun is what one steering did in one cell.
type matrixRun struct {
	Steering                 string  `json:"steering"`
	RejectedWhileServersIdle int     `json:"rejectedWhileServersIdle"`
	Jain                     float64 `json:"jain"`
	Goodput                  float64 `json:"goodput"`
	GoAways                  int     `json:"goaways"`
}

// matrixRow is one cell of the matrix, coordinated or not, every steering
// run on it.
type matrixRow struct {
	Replicas   int         `json:"replicas"`
	Pinned     int         `json:"pinned"`
	Light      int         `json:"light"`
	Spread     bool        `json:"spread"`
	Seed       uint64      `json:"seed"`
	Coordinate bool        `json:"coordinate"`
	Runs       []matrixRun `json:"runs"`
}

// matrixReport is fleet --matrix's -o json shape.
type matrixReport struct {
	Rows []matrixRow `json:"rows"`
}

// runMatrix runs every steering on every cell, uncoordinated and
// coordinated, with the flags' duration and caps, each cell's seed moved
// by the flags' seed less 1.
func (f fleetFlags) runMatrix(cells []matrixCell) (matrixReport, error) {
	var rep matrixReport
	for _, coordinate := range []bool{false, true} {
		for _, cell := range cells {
			row := matrixRow{Replicas: cell.Replicas, Pinned: cell.Pinned, Light: cell.Light, Spread: cell.Spread, Seed: cell.Seed + f.seed - 1, Coordinate: coordinate}
			for _, st := range steerings {
				ff := f
				ff.replicas, ff.pinned, ff.pinnedTo, ff.light, ff.seed = cell.Replicas, cell.Pinned, 0, cell.Light, row.Seed
				ff.spread = 0
				if cell.Spread {
					ff.spread = 1
				}
				ff.balancer, ff.coordinate = string(fleetsim.BalancerPinned), coordinate
				ff.goaway, ff.goawayChance = string(st.mode), st.chance
				cfg, _ := ff.config()
				res, err := fleetsim.Run(cfg)
				if err != nil {
					return rep, err
				}
				row.Runs = append(row.Runs, matrixRun{Steering: st.Name, RejectedWhileServersIdle: res.RejectedWhileServersIdle,
					Jain: res.Jain, Goodput: res.Goodput, GoAways: res.GoAways})
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	return rep, nil
}

// verdict is how targeted steering did in a row against the issue's
// bars: its rejections while the servers idle within 10% (+5) of the
// better random setting's, Jain at least 0.95, goodput at least 97% of
// the best, and fewer GOAWAYs than random 0.02.
type verdict struct{ rejections, jain, goodput, goaways bool }

func (r matrixRow) verdict() verdict {
	by := map[string]matrixRun{}
	best := 0.0
	for _, run := range r.Runs {
		by[run.Steering] = run
		best = max(best, run.Goodput)
	}
	t, lo, hi := by["targeted"], by["random 0.001"], by["random 0.02"]
	better := min(lo.RejectedWhileServersIdle, hi.RejectedWhileServersIdle)
	return verdict{
		rejections: float64(t.RejectedWhileServersIdle) <= 1.1*float64(better)+5,
		jain:       t.Jain >= 0.95,
		goodput:    t.Goodput >= 0.97*best,
		goaways:    t.GoAways < hi.GoAways,
	}
}

// writeText prints the matrix as a Markdown table, one row per cell and
// mode, each steering's rejections while the servers idled, Jain,
// goodput and GOAWAYs, then how many rows meet each bar per mode.
func (m matrixReport) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	fmt.Fprint(tw, "| cell (replicas/pinned/light/spread/seed) | coord\t|")
	for _, st := range steerings {
		fmt.Fprintf(tw, " %s: rej idle, Jain, goodput, goaways\t|", st.Name)
	}
	fmt.Fprint(tw, " targeted meets\t|\n|---|---|")
	for range steerings {
		fmt.Fprint(tw, "---|")
	}
	fmt.Fprint(tw, "---|\n")
	pass := map[bool][4]int{}
	rows := map[bool]int{}
	for _, r := range m.Rows {
		spread := "no"
		if r.Spread {
			spread = "yes"
		}
		fmt.Fprintf(tw, "| %d/%d/%d/%s/%d | %t\t|", r.Replicas, r.Pinned, r.Light, spread, r.Seed, r.Coordinate)
		for _, run := range r.Runs {
			fmt.Fprintf(tw, " %d, %.3f, %.1f, %d\t|", run.RejectedWhileServersIdle, run.Jain, run.Goodput, run.GoAways)
		}
		v := r.verdict()
		fmt.Fprintf(tw, " %s\t|\n", v)
		p := pass[r.Coordinate]
		for i, ok := range []bool{v.rejections, v.jain, v.goodput, v.goaways} {
			if ok {
				p[i]++
			}
		}
		pass[r.Coordinate], rows[r.Coordinate] = p, rows[r.Coordinate]+1
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, coordinate := range []bool{false, true} {
		p := pass[coordinate]
		fmt.Fprintf(w, "\ncoordinate %t: targeted within 10%% (+5) of the better random's rejections while the servers idle in %d of %d rows, Jain >= 0.95 in %d, goodput >= 97%% of the best in %d, fewer GOAWAYs than random 0.02 in %d\n",
			coordinate, p[0], rows[coordinate], p[1], p[2], p[3])
	}
	return nil
}

// String is the bars a row meets, R J G A for rejections, Jain, goodput
// and GOAWAYs, a dash for each missed.
func (v verdict) String() string {
	out := []byte("----")
	for i, ok := range []bool{v.rejections, v.jain, v.goodput, v.goaways} {
		if ok {
			out[i] = "RJGA"[i]
		}
	}
	return string(out)
}
