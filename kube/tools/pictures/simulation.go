package pictures

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/fairslice/fairslice/fairqueue/scenario"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// MaxFlows is how many flows a simulation picture draws: the flows with
// the most requests, ties by hash. The others are counted in
// SimulationRun.Omitted.
const MaxFlows = 8

// Point is a step of a count over time: from T seconds on, the count is N.
type Point struct {
	T float64 `json:"t"`
	N int     `json:"n"`
}

// Mark is a rejection: when (seconds) and why.
type Mark struct {
	T      float64 `json:"t"`
	Reason string  `json:"reason"`
}

// FlowTimeline is what a simulation picture draws for one flow.
type FlowTimeline struct {
	Hash uint64 `json:"hash"`
	// Waiting and Executing are step series starting at time 0 and ending
	// at the run's span: requests in a queue, and requests dispatched and
	// not yet done (Duration; additional latency is not counted).
	Waiting   []Point `json:"waiting"`
	Executing []Point `json:"executing"`
	// Dispatches are the dispatch instants in seconds, in request order.
	Dispatches []float64 `json:"dispatches"`
	// Rejections are rejections at arrival (at the arrival) and wait-limit
	// expiries (at arrival plus the wait limit), in request order.
	Rejections []Mark `json:"rejections"`
	// Waits are the waits (dispatch minus arrival) of the dispatched
	// requests in seconds, sorted: the wait-time CDF.
	Waits []float64 `json:"waits"`
}

// SimulationRun is one run of a scenario through one engine.
type SimulationRun struct {
	// Engine is "fairslice" or "upstream".
	Engine string `json:"engine"`
	// Span is the summary's span in seconds.
	Span  float64        `json:"span"`
	Flows []FlowTimeline `json:"flows"`
	// Omitted counts the flows not drawn (beyond MaxFlows).
	Omitted int `json:"omitted"`

	summary scenario.Summary
}

// NewSimulationRun extracts the series of a picture from a run: s and the
// results scenario.Run returned for it, which are also what "fairslice
// simulate" prints. It works for any source of a scenario and its results.
func NewSimulationRun(engine string, s *scenario.Scenario, results []scenario.Result) SimulationRun {
	sum := scenario.Summarize(s, results)
	run := SimulationRun{Engine: engine, Span: sum.Span.Seconds(), summary: sum}
	flows := slices.Clone(sum.Flows)
	slices.SortStableFunc(flows, func(a, b scenario.FlowStats) int { return cmp.Compare(b.Requests, a.Requests) })
	if len(flows) > MaxFlows {
		run.Omitted = len(flows) - MaxFlows
		flows = flows[:MaxFlows]
	}
	slices.SortFunc(flows, func(a, b scenario.FlowStats) int { return cmp.Compare(a.Hash, b.Hash) })
	for _, f := range flows {
		run.Flows = append(run.Flows, flowTimeline(f.Hash, s, results, sum.Span))
	}
	return run
}

// change is a change of the waiting and executing counts at an instant.
type change struct {
	at         time.Duration
	wait, exec int
}

// flowTimeline computes the series of the flow with the given hash.
func flowTimeline(hash uint64, s *scenario.Scenario, results []scenario.Result, span time.Duration) FlowTimeline {
	f := FlowTimeline{Hash: hash, Dispatches: []float64{}, Rejections: []Mark{}, Waits: []float64{}}
	var changes []change
	for i, req := range s.Requests {
		if req.Hash != hash {
			continue
		}
		res := results[i]
		switch {
		case res.Outcome == scenario.OutcomeDispatched:
			changes = append(changes,
				change{at: req.Arrival, wait: 1},
				change{at: res.DispatchedAt, wait: -1, exec: 1},
				change{at: res.DispatchedAt + req.Duration, exec: -1})
			f.Dispatches = append(f.Dispatches, res.DispatchedAt.Seconds())
			f.Waits = append(f.Waits, (res.DispatchedAt - req.Arrival).Seconds())
		case res.Reason == scenario.ReasonTimeOut:
			end := req.Arrival + req.WaitLimit
			changes = append(changes, change{at: req.Arrival, wait: 1}, change{at: end, wait: -1})
			f.Rejections = append(f.Rejections, Mark{T: end.Seconds(), Reason: string(res.Reason)})
		case res.Outcome == scenario.OutcomeRejected:
			f.Rejections = append(f.Rejections, Mark{T: req.Arrival.Seconds(), Reason: string(res.Reason)})
		default: // waiting to the end
			changes = append(changes, change{at: req.Arrival, wait: 1})
		}
	}
	slices.Sort(f.Waits)
	slices.SortStableFunc(changes, func(a, b change) int { return cmp.Compare(a.at, b.at) })
	wait, exec := 0, 0
	f.Waiting = []Point{{0, 0}}
	f.Executing = []Point{{0, 0}}
	for i, c := range changes {
		wait += c.wait
		exec += c.exec
		if i+1 < len(changes) && changes[i+1].at == c.at {
			continue // one point per instant, after all its changes
		}
		t := c.at.Seconds()
		f.Waiting = appendStep(f.Waiting, t, wait)
		f.Executing = appendStep(f.Executing, t, exec)
	}
	f.Waiting = appendStep(f.Waiting, span.Seconds(), wait)
	f.Executing = appendStep(f.Executing, span.Seconds(), exec)
	return f
}

// appendStep appends (t, n) unless the count is unchanged, keeping the last
// point of a series at the span.
func appendStep(ps []Point, t float64, n int) []Point {
	last := ps[len(ps)-1]
	if last.T == t {
		ps[len(ps)-1].N = n
		return ps
	}
	return append(ps, Point{t, n})
}

// at returns the count of a step series at time t.
func at(ps []Point, t float64) int {
	n := 0
	for _, p := range ps {
		if p.T > t {
			break
		}
		n = p.N
	}
	return n
}

// SimulationData is what a simulation picture embeds: one run, or two
// drawn on the same axes (fairslice's and upstream's).
type SimulationData struct {
	Runs []SimulationRun `json:"runs"`
}

// Simulation draws one or two runs of the same scenario: per flow, the
// requests waiting (rejections marked ×) and executing (dispatches marked
// •) over time, the wait-time CDF, and the outcome counts. A second run
// is drawn dashed on the same axes.
func Simulation(title string, runs ...SimulationRun) *Figure {
	fig := &Figure{Title: title, Data: SimulationData{Runs: runs}, Height: 620}
	waiting, executing, cdf, counts := plot.New(), plot.New(), plot.New(), plot.New()
	waiting.Title.Text = "requests waiting (× rejected)"
	executing.Title.Text = "requests executing (• dispatched)"
	cdf.Title.Text = "wait-time distribution (CDF)"
	counts.Title.Text = "outcomes"
	waiting.X.Label.Text, executing.X.Label.Text = "time (s)", "time (s)"
	cdf.X.Label.Text, cdf.Y.Label.Text = "wait (s)", "fraction of dispatched requests"
	counts.Y.Label.Text = "requests"
	for _, p := range []*plot.Plot{waiting, executing, cdf, counts} {
		p.Title.TextStyle.Font.Size = 11
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.TextStyle.Font.Size = 9
		p.Legend.XOffs = vg.Points(6)
	}
	waiting.Y.Min, executing.Y.Min, cdf.Y.Min, cdf.Y.Max = 0, 0, 0, 1
	hashes := map[uint64]int{}
	for _, run := range runs {
		for _, f := range run.Flows {
			if _, ok := hashes[f.Hash]; !ok {
				hashes[f.Hash] = len(hashes)
			}
		}
	}
	for r, run := range runs {
		for _, f := range run.Flows {
			i := hashes[f.Hash]
			style := lineStyle(i, r)
			label := ""
			if r == 0 {
				label = "flow " + strconv.FormatUint(f.Hash, 10)
			}
			addSteps(waiting, f.Waiting, style, label)
			addSteps(executing, f.Executing, style, "")
			addMarks(waiting, len(f.Rejections), func(k int) (float64, float64) {
				t := f.Rejections[k].T
				return t, float64(at(f.Waiting, t))
			}, style.Color, draw.CrossGlyph{})
			addMarks(executing, len(f.Dispatches), func(k int) (float64, float64) {
				t := f.Dispatches[k]
				return t, float64(at(f.Executing, t))
			}, style.Color, draw.CircleGlyph{})
			addCDF(cdf, f.Waits, style)
		}
		if len(runs) > 1 {
			l, _ := plotter.NewLine(plotter.XYs{})
			l.LineStyle = lineStyle(0, r)
			l.LineStyle.Color = color.Black
			cdf.Legend.Add(run.Engine, l)
		}
	}
	addOutcomeBars(counts, runs, hashes)
	// Room above the data for the legends.
	for _, p := range []*plot.Plot{waiting, executing, counts} {
		p.Y.Max = math.Ceil(p.Y.Max * 1.3)
		p.Y.Tick.Marker = integerTicks{}
	}
	counts.X.Max += 0.4 // room for the last flow's label
	counts.X.Tick.Label.Font.Size = 9
	fig.Plots = [][]*plot.Plot{{waiting, cdf}, {executing, counts}}
	for _, run := range runs {
		if run.Omitted > 0 {
			fig.Notes = append(fig.Notes, fmt.Sprintf("%s: %d more flows not drawn (only the %d with the most requests)", run.Engine, run.Omitted, MaxFlows))
		}
		fig.Notes = append(fig.Notes, fmt.Sprintf("%s: span %.3gs, Jain's fairness index over seat-seconds %.4f", run.Engine, run.Span, run.summary.Fairness))
	}
	fig.Table = simulationTable(runs)
	return fig
}

// lineStyle is flow i's colour, solid for the first run and dashed for
// the second.
func lineStyle(i, run int) draw.LineStyle {
	s := draw.LineStyle{Color: plotutil.DarkColors[i%len(plotutil.DarkColors)], Width: vg.Points(1.2)}
	if run > 0 {
		s.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return s
}

func addSteps(p *plot.Plot, ps []Point, style draw.LineStyle, label string) {
	xys := make(plotter.XYs, len(ps))
	for i, pt := range ps {
		xys[i] = plotter.XY{X: pt.T, Y: float64(pt.N)}
	}
	l, _ := plotter.NewLine(xys) // finite values only
	l.StepStyle = plotter.PostStep
	l.LineStyle = style
	p.Add(l)
	if label != "" {
		p.Legend.Add(label, l)
	}
}

func addMarks(p *plot.Plot, n int, xy func(int) (float64, float64), c color.Color, shape draw.GlyphDrawer) {
	if n == 0 {
		return
	}
	xys := make(plotter.XYs, n)
	for k := range xys {
		xys[k].X, xys[k].Y = xy(k)
	}
	s, _ := plotter.NewScatter(xys)
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: shape}
	p.Add(s)
}

// addCDF draws the empirical distribution of sorted waits as a step line
// from (0, 0).
func addCDF(p *plot.Plot, waits []float64, style draw.LineStyle) {
	if len(waits) == 0 {
		return
	}
	xys := plotter.XYs{{X: 0, Y: 0}}
	n := float64(len(waits))
	for i, w := range waits {
		xys = append(xys, plotter.XY{X: w, Y: float64(i+1) / n})
	}
	l, _ := plotter.NewLine(xys)
	l.StepStyle = plotter.PostStep
	l.LineStyle = style
	p.Add(l)
}

// addOutcomeBars draws, per flow, the dispatched and rejected (time-outs
// included) counts of each run.
func addOutcomeBars(p *plot.Plot, runs []SimulationRun, hashes map[uint64]int) {
	order := make([]uint64, len(hashes))
	for h, i := range hashes {
		order[i] = h
	}
	names := make([]string, len(order))
	for i, h := range order {
		names[i] = strconv.FormatUint(h, 10)
	}
	p.NominalX(names...)
	p.X.Label.Text = "flow"
	const width = 8
	series := 2 * len(runs)
	k := 0
	for r, run := range runs {
		byHash := map[uint64]FlowTimeline{}
		for _, f := range run.Flows {
			byHash[f.Hash] = f
		}
		for o, name := range []string{"dispatched", "rejected"} {
			vals := make(plotter.Values, len(order))
			for i, h := range order {
				f := byHash[h]
				vals[i] = float64(len(f.Dispatches))
				if o == 1 {
					vals[i] = float64(len(f.Rejections))
				}
			}
			b, _ := plotter.NewBarChart(vals, width)
			b.Color = []color.Color{color.RGBA{0x4c, 0x9a, 0x2a, 0xff}, color.RGBA{0xc0, 0x39, 0x2b, 0xff}}[o]
			b.LineStyle.Width = 0
			if r > 0 {
				b.Color = lighter(b.Color)
			}
			b.Offset = vg.Points(float64(width) * (float64(k) - float64(series-1)/2))
			p.Add(b)
			label := name
			if len(runs) > 1 {
				label = run.Engine + " " + name
			}
			p.Legend.Add(label, b)
			k++
		}
	}
}

func lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8 + 255*2) / 3) }
	return color.RGBA{mix(r), mix(g), mix(b), 0xff}
}

func simulationTable(runs []SimulationRun) [][]string {
	t := [][]string{{"engine", "flow (hash)", "requests", "dispatched", "rejected", "timed out", "waiting", "seat-seconds", "wait p50", "wait p90", "wait p99"}}
	for _, run := range runs {
		for _, f := range run.summary.Flows {
			t = append(t, []string{run.Engine, strconv.FormatUint(f.Hash, 10),
				strconv.Itoa(f.Requests), strconv.Itoa(f.Dispatched), strconv.Itoa(f.Rejected),
				strconv.Itoa(f.TimedOut), strconv.Itoa(f.Waiting), fmt.Sprintf("%.3f", f.SeatSeconds),
				f.WaitP50.String(), f.WaitP90.String(), f.WaitP99.String()})
		}
	}
	return t
}

// integerTicks keeps the default ticks that fall on integers.
type integerTicks struct{}

func (integerTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Value == math.Trunc(t.Value) {
			if t.Label != "" {
				t.Label = strconv.FormatFloat(t.Value, 'f', 0, 64)
			}
			out = append(out, t)
		}
	}
	return out
}
