package pictures

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot"
)

func TestPodSweep(t *testing.T) {
	tests := []struct {
		pods int
		want []int
	}{
		{1, []int{1}},
		{2, []int{1, 2}},
		{10, []int{1, 2, 5, 10}},
		{11, []int{1, 2, 5, 10, 11}},
		{500, []int{1, 2, 5, 10, 20, 50, 100, 200, 500}},
	}
	for _, tt := range tests {
		if got := PodSweep(tt.pods); !cmp.Equal(got, tt.want) {
			t.Errorf("PodSweep(%d) = %v, want %v", tt.pods, got, tt.want)
		}
	}
}

func TestAppendStep(t *testing.T) {
	ps := []Point{{0, 0}}
	ps = appendStep(ps, 1, 2)
	ps = appendStep(ps, 1, 3) // same instant: replaced
	ps = appendStep(ps, 2, 3) // unchanged count: kept, a series ends at its span
	want := []Point{{0, 0}, {1, 3}, {2, 3}}
	if diff := cmp.Diff(want, ps); diff != "" {
		t.Errorf("appendStep series (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		t    float64
		want int
	}{{0, 0}, {0.5, 0}, {1, 3}, {5, 3}} {
		if got := at(ps, tt.t); got != tt.want {
			t.Errorf("at(%v, %v) = %d, want %d", ps, tt.t, got, tt.want)
		}
	}
}

func TestReadDataErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"not XML", "<svg><g></svg>", "not well-formed"},
		{"no metadata", `<svg xmlns="http://www.w3.org/2000/svg"></svg>`, "no <metadata"},
		{"other metadata", `<svg xmlns="http://www.w3.org/2000/svg"><metadata id="x">{}</metadata></svg>`, "no <metadata"},
		{"bad JSON", `<svg xmlns="http://www.w3.org/2000/svg"><metadata id="fairslice-data">{</metadata></svg>`, "metadata"},
	}
	for _, tt := range tests {
		var v any
		err := ReadData(strings.NewReader(tt.doc), &v)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadData(%s) = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// TestFigureFormats writes one figure in every format: the SVG and the
// page hold the data, the PNG decodes at the figure's size.
func TestFigureFormats(t *testing.T) {
	fig := Odds(NewOddsData([]OddsPoint{{Queues: 64, Hand: 8, Elephants: 4, Probability: 0.0004887}}))
	for name, write := range map[string]func(*bytes.Buffer) error{
		"svg":  func(b *bytes.Buffer) error { return fig.WriteSVG(b) },
		"html": func(b *bytes.Buffer) error { return fig.WriteHTML(b) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var d OddsData
		if err := ReadData(&b, &d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(d.Points) != 1 || len(d.Curves) != 1 || len(d.Curves[0].Probabilities) != MaxOddsHand {
			t.Errorf("%s: data %+v, want 1 point and 1 curve of %d hands", name, d, MaxOddsHand)
		}
	}
	var b bytes.Buffer
	if err := fig.WritePNG(&b); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	w, h := fig.size()
	if got := img.Bounds().Size(); got.X != int(w.Points()*96/72+0.5) || got.Y != int(h.Points()*96/72+0.5) {
		t.Errorf("PNG size %v, want %v×%v points at 96 dpi", got, w, h)
	}
}

// TestDrawFailureIsAnError checks that a plot the library cannot draw (a
// logarithmic axis with no positive value) gives an error, not a panic.
func TestDrawFailureIsAnError(t *testing.T) {
	p := plot.New()
	p.Y.Scale = plot.LogScale{}
	fig := &Figure{Title: "empty log axis", Plots: [][]*plot.Plot{{p}}}
	if err := fig.WriteSVG(&bytes.Buffer{}); err == nil {
		t.Error("WriteSVG of a plot with an empty log axis = nil, want an error")
	}
}

// TestOddsWithoutElephants checks that 0 elephants, whose probability a
// log axis cannot show, is noted instead of drawn.
func TestOddsWithoutElephants(t *testing.T) {
	fig := Odds(NewOddsData([]OddsPoint{{Queues: 64, Hand: 8, Elephants: 0}, {Queues: 64, Hand: 8, Elephants: 2, Probability: 1e-5}}))
	if err := fig.WriteSVG(&bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if len(fig.Plots[0]) != 1 || !strings.Contains(strings.Join(fig.Notes, " "), "no elephants") {
		t.Errorf("Odds with 0 and 2 elephants: %d panels, notes %q; want 1 panel and a note", len(fig.Plots[0]), fig.Notes)
	}
}
