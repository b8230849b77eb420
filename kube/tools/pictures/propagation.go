package pictures

import (
	"fmt"
	"image/color"
	"math"

	"github.com/fairslice/fairslice/slicer/propagation"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PodSweep returns the pod counts a propagation picture draws up to pods:
// 1, 2, 5, 10, 20, 50, ... below pods, then pods itself.
func PodSweep(pods int) []int {
	var out []int
	for decade := 1; decade < pods; decade *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*decade < pods {
				out = append(out, m*decade)
			}
		}
	}
	return append(out, pods)
}

// DesignSeries is one way of publishing endpoints over the pod sweep, in
// protobuf bytes as etcd stores them.
type DesignSeries struct {
	Name string `json:"name"`
	// LargestObject, RollingWritten and RollingSent are, per pod count,
	// the largest object after creation, the bytes written during the
	// rolling update, and those bytes times the watching nodes.
	LargestObject  []float64 `json:"largestObject"`
	RollingWritten []float64 `json:"rollingWritten"`
	RollingSent    []float64 `json:"rollingSent"`
}

// PropagationData is what a propagation picture embeds.
type PropagationData struct {
	Nodes   int            `json:"nodes"`
	Pods    []int          `json:"pods"`
	Designs []DesignSeries `json:"designs"`
	// EtcdLimitBytes is etcd's default request limit; EtcdLimitPods the
	// smallest pod count whose Endpoints object (protobuf) exceeds it.
	EtcdLimitBytes int `json:"etcdLimitBytes"`
	EtcdLimitPods  int `json:"etcdLimitPods"`
}

// NewPropagationData collects the series of reports, which are
// propagation.Simulate's reports for increasing pod counts and one node
// count (as "fairslice propagation" prints each).
func NewPropagationData(reports []propagation.Report) (PropagationData, error) {
	if len(reports) == 0 {
		return PropagationData{}, fmt.Errorf("pictures: no propagation reports")
	}
	d := PropagationData{Nodes: reports[0].Config.Nodes, EtcdLimitBytes: propagation.EtcdDefaultMaxRequestBytes,
		EtcdLimitPods: reports[0].EtcdLimitPods.Protobuf}
	for _, des := range reports[0].Designs {
		d.Designs = append(d.Designs, DesignSeries{Name: des.Name})
	}
	for _, r := range reports {
		if r.Config.Nodes != d.Nodes || len(r.Designs) != len(d.Designs) {
			return PropagationData{}, fmt.Errorf("pictures: reports for %d and %d nodes mixed", d.Nodes, r.Config.Nodes)
		}
		d.Pods = append(d.Pods, r.Config.Pods)
		for i, des := range r.Designs {
			s := &d.Designs[i]
			sent, _ := r.Sent(des.RollingBytes)
			s.LargestObject = append(s.LargestObject, float64(des.ObjectSize.Protobuf))
			s.RollingWritten = append(s.RollingWritten, float64(des.RollingBytes.Protobuf))
			s.RollingSent = append(s.RollingSent, sent)
		}
	}
	return d, nil
}

var designColors = []color.Color{
	color.RGBA{0xc0, 0x39, 0x2b, 0xff}, // Endpoints
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, // 100 per slice
	color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, // 1 per slice
}

// Propagation draws a rolling update's bytes written and sent against the
// number of pods (log-log), for one Endpoints object and slices of 100 and
// of 1, and the largest object against etcd's request limit.
func Propagation(d PropagationData) *Figure {
	fig := &Figure{
		Title: fmt.Sprintf("fairslice propagation: rolling update of P pods watched by %d nodes (protobuf)", d.Nodes),
		Data:  d, Height: 440,
	}
	if last := d.Pods[len(d.Pods)-1]; d.EtcdLimitPods <= last {
		fig.Notes = append(fig.Notes, fmt.Sprintf("One Endpoints object passes etcd's default 1.5 MiB request limit at %d pods: from there on, every write of it fails.", d.EtcdLimitPods))
	} else {
		fig.Notes = append(fig.Notes, fmt.Sprintf("One Endpoints object would pass etcd's default 1.5 MiB request limit at %d pods.", d.EtcdLimitPods))
	}
	bytes, objects := plot.New(), plot.New()
	bytes.Title.Text = "rolling update: bytes written (solid), sent to watchers (dashed)"
	objects.Title.Text = "largest object"
	for _, p := range []*plot.Plot{bytes, objects} {
		p.Title.TextStyle.Font.Size = 11
		p.X.Label.Text = "pods"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker = countTicks{}
		p.Y.Tick.Marker = byteTicks{}
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.TextStyle.Font.Size = 9
		p.Legend.XOffs = vg.Points(6)
		p.Add(plotter.NewGrid())
	}
	for i, s := range d.Designs {
		style := draw.LineStyle{Color: designColors[i%len(designColors)], Width: vg.Points(1.5)}
		l := addXY(bytes, d.Pods, s.RollingWritten, style)
		bytes.Legend.Add(s.Name, l)
		style.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		addXY(bytes, d.Pods, s.RollingSent, style)
		style.Dashes = nil
		l = addXY(objects, d.Pods, s.LargestObject, style)
		objects.Legend.Add(s.Name, l)
	}
	limit := draw.LineStyle{Color: color.Black, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
	lo, hi := float64(d.Pods[0]), float64(d.Pods[len(d.Pods)-1])
	l, _ := plotter.NewLine(plotter.XYs{{X: lo, Y: float64(d.EtcdLimitBytes)}, {X: hi, Y: float64(d.EtcdLimitBytes)}})
	l.LineStyle = limit
	objects.Add(l)
	objects.Legend.Add("etcd's 1.5 MiB request limit", l)
	objects.Y.Max = math.Max(objects.Y.Max, 20*float64(d.EtcdLimitBytes)) // room for the legend
	if x := float64(d.EtcdLimitPods); x <= hi {
		v, _ := plotter.NewLine(plotter.XYs{{X: x, Y: objects.Y.Min}, {X: x, Y: float64(d.EtcdLimitBytes)}})
		v.LineStyle = limit
		objects.Add(v)
		labels, _ := plotter.NewLabels(plotter.XYLabels{
			XYs:    plotter.XYs{{X: x, Y: math.Max(objects.Y.Min, 1) * 2}},
			Labels: []string{fmt.Sprintf("%d pods ", d.EtcdLimitPods)},
		})
		labels.TextStyle[0].Font.Size = 9
		labels.TextStyle[0].XAlign = draw.XRight
		objects.Add(labels)
	}
	fig.Plots = [][]*plot.Plot{{bytes, objects}}
	fig.Table = [][]string{{"pods"}}
	for _, s := range d.Designs {
		fig.Table[0] = append(fig.Table[0], s.Name+": largest object (B)", s.Name+": rolling update written (B)", s.Name+": sent (B)")
	}
	for i, p := range d.Pods {
		row := []string{fmt.Sprint(p)}
		for _, s := range d.Designs {
			row = append(row, fmt.Sprintf("%.0f", s.LargestObject[i]), fmt.Sprintf("%.0f", s.RollingWritten[i]), fmt.Sprintf("%.4g", s.RollingSent[i]))
		}
		fig.Table = append(fig.Table, row)
	}
	return fig
}

func addXY(p *plot.Plot, xs []int, ys []float64, style draw.LineStyle) *plotter.Line {
	xys := make(plotter.XYs, len(xs))
	for i := range xs {
		xys[i] = plotter.XY{X: float64(xs[i]), Y: ys[i]}
	}
	l, _ := plotter.NewLine(xys)
	l.LineStyle = style
	p.Add(l)
	return l
}

// powerTicks returns a major tick at every power of ten in [min, max],
// labelled by label.
func powerTicks(min, max float64, label func(float64) string) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		v := math.Pow(10, e)
		if v < min*0.999 || v > max*1.001 {
			continue
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label(v)})
	}
	return ticks
}

// byteTicks labels powers of ten in decimal byte units.
type byteTicks struct{}

func (byteTicks) Ticks(min, max float64) []plot.Tick {
	return powerTicks(min, max, func(v float64) string {
		units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
		i := 0
		for v >= 1000 && i < len(units)-1 {
			v /= 1000
			i++
		}
		return fmt.Sprintf("%.0f %s", v, units[i])
	})
}

// countTicks labels powers of ten as plain numbers.
type countTicks struct{}

func (countTicks) Ticks(min, max float64) []plot.Tick {
	return powerTicks(min, max, func(v float64) string { return fmt.Sprintf("%.0f", v) })
}
