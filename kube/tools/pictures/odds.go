package pictures

import (
	"fmt"
	"math"
	"strconv"

	"github.com/fairslice/fairslice/shufflesharding"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// OddsPoint is one cell of the odds table: the probability that a mouse
// flow is squished by Elephants elephants, with a deck of Queues and a
// hand of Hand.
type OddsPoint struct {
	Queues      int     `json:"queues"`
	Hand        int     `json:"hand"`
	Elephants   int     `json:"elephants"`
	Probability float64 `json:"probability"`
}

// OddsCurve is the squish probability of one deck and number of
// elephants for the hand sizes 1 to len(Probabilities).
type OddsCurve struct {
	Queues        int       `json:"queues"`
	Elephants     int       `json:"elephants"`
	Probabilities []float64 `json:"probabilities"`
}

// OddsData is what an odds picture embeds: the table's cells as points and
// a curve through every hand size for each deck of the table.
type OddsData struct {
	Points []OddsPoint `json:"points"`
	Curves []OddsCurve `json:"curves"`
}

// MaxOddsHand is the hand size odds curves reach at least (decks
// permitting); a curve goes on to the largest hand of its points, up to
// 64, as the cost of a probability grows with the cube of the hand.
const MaxOddsHand = 16

const maxCurveHand = 64

// NewOddsData computes a curve for each deck and number of elephants of
// points, over hand sizes 1 to the larger of the largest hand of points
// and min(MaxOddsHand, deck) (at most 64), with shufflesharding.SquishProbability as
// "fairslice odds" computes the table.
func NewOddsData(points []OddsPoint) OddsData {
	d := OddsData{Points: points}
	type key struct{ queues, elephants int }
	hands := map[key]int{}
	var order []key
	for _, p := range points {
		k := key{p.Queues, p.Elephants}
		if _, ok := hands[k]; !ok {
			order = append(order, k)
		}
		hands[k] = min(max(hands[k], p.Hand, min(MaxOddsHand, p.Queues)), maxCurveHand)
	}
	for _, k := range order {
		c := OddsCurve{Queues: k.queues, Elephants: k.elephants}
		for h := 1; h <= hands[k]; h++ {
			c.Probabilities = append(c.Probabilities, shufflesharding.SquishProbability(k.queues, h, k.elephants))
		}
		d.Curves = append(d.Curves, c)
	}
	return d
}

// Odds draws the squish probability against hand size, one panel per
// number of elephants and one curve per deck, with the table's cells as
// points. Probabilities of 0 (no elephants) have no place on the
// logarithmic axis and are left out.
func Odds(d OddsData) *Figure {
	fig := &Figure{Title: "fairslice odds: probability that a mouse flow's whole hand is shared with elephants", Data: d, Height: 440}
	var elephants []int
	seen := map[int]bool{}
	for _, c := range d.Curves {
		if !seen[c.Elephants] {
			seen[c.Elephants] = true
			elephants = append(elephants, c.Elephants)
		}
	}
	decks := map[int]int{}
	for _, c := range d.Curves {
		if _, ok := decks[c.Queues]; !ok {
			decks[c.Queues] = len(decks)
		}
	}
	var row []*plot.Plot
	for _, e := range elephants {
		if e == 0 {
			fig.Notes = append(fig.Notes, "With no elephants the probability is 0, which a logarithmic axis cannot show: not drawn.")
			continue
		}
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%d elephant%s", e, map[bool]string{true: "", false: "s"}[e == 1])
		p.Title.TextStyle.Font.Size = 11
		p.X.Label.Text = "hand size"
		p.X.Tick.Marker = handTicks{}
		p.Y.Label.Text = "squish probability"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = probabilityTicks{}
		p.Legend.Top, p.Legend.Left = false, true
		p.Legend.TextStyle.Font.Size = 9
		p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), vg.Points(6)
		p.Add(plotter.NewGrid())
		for _, c := range d.Curves {
			if c.Elephants != e {
				continue
			}
			i := decks[c.Queues]
			var xys plotter.XYs
			for h, pr := range c.Probabilities {
				if pr > 0 {
					xys = append(xys, plotter.XY{X: float64(h + 1), Y: pr})
				}
			}
			if len(xys) == 0 {
				continue
			}
			l, _ := plotter.NewLine(xys)
			l.LineStyle = draw.LineStyle{Color: plotutil.DarkColors[i%len(plotutil.DarkColors)], Width: vg.Points(1.2)}
			p.Add(l)
			p.Legend.Add(strconv.Itoa(c.Queues)+" queues", l)
			var pts plotter.XYs
			for _, pt := range d.Points {
				if pt.Queues == c.Queues && pt.Elephants == e && pt.Probability > 0 {
					pts = append(pts, plotter.XY{X: float64(pt.Hand), Y: pt.Probability})
				}
			}
			if len(pts) > 0 {
				s, _ := plotter.NewScatter(pts)
				s.GlyphStyle = draw.GlyphStyle{Color: l.LineStyle.Color, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
				p.Add(s)
			}
		}
		row = append(row, p)
	}
	fig.Notes = append([]string{"Curves: every hand size for each deck; points: the configurations of the table (\"fairslice odds\"), as in the Kubernetes docs."}, fig.Notes...)
	fig.Plots = [][]*plot.Plot{row}
	fig.Table = [][]string{{"queues", "hand", "elephants", "squish probability"}}
	for _, pt := range d.Points {
		fig.Table = append(fig.Table, []string{strconv.Itoa(pt.Queues), strconv.Itoa(pt.Hand), strconv.Itoa(pt.Elephants), strconv.FormatFloat(pt.Probability, 'g', 4, 64)})
	}
	return fig
}

// probabilityTicks labels every power of ten, naming every third when
// there are many.
type probabilityTicks struct{}

func (probabilityTicks) Ticks(min, max float64) []plot.Tick {
	ticks := powerTicks(min, max, func(v float64) string { return fmt.Sprintf("1e%d", int(math.Round(math.Log10(v)))) })
	step := (len(ticks) + 7) / 8
	for i := range ticks {
		if i%step != 0 {
			ticks[i].Label = ""
		}
	}
	return ticks
}

// handTicks marks every hand size, labelling 1 and the multiples of 4.
type handTicks struct{}

func (handTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for h := math.Ceil(min); h <= max; h++ {
		t := plot.Tick{Value: h}
		if h == 1 || math.Mod(h, 4) == 0 {
			t.Label = strconv.FormatFloat(h, 'f', 0, 64)
		}
		out = append(out, t)
	}
	return out
}
