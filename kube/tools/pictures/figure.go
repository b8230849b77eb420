package pictures

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// MetadataID is the id of the SVG <metadata> element that holds a
// Figure's data series as JSON.
const MetadataID = "fairslice-data"

// Figure is one picture: a title and notes across the top, a grid of plots
// below, and the data series the plots draw. Data is what ReadData returns
// from the written SVG or HTML; Table is the numbers the HTML page shows
// under the picture (a header row, then one row each).
type Figure struct {
	Title string
	// Notes are lines of text under the title (a reason, a limit crossed).
	Notes []string
	// Plots is the grid, row by row; every row has the same length, and a
	// nil plot leaves its cell empty.
	Plots [][]*plot.Plot
	// Width and Height are the picture's size; zero means 900×560 points.
	Width, Height vg.Length
	Data          any
	Table         [][]string
}

func (f *Figure) size() (w, h vg.Length) {
	w, h = f.Width, f.Height
	if w == 0 {
		w = 900
	}
	if h == 0 {
		h = 560
	}
	return w, h
}

// headerStyle returns the text style of the title (size 15) or of the notes.
func headerStyle(size vg.Length) text.Style {
	return text.Style{
		Color:   color.Black,
		Font:    font.From(plot.DefaultFont, size),
		XAlign:  draw.XLeft,
		YAlign:  draw.YTop,
		Handler: plot.DefaultTextHandler,
	}
}

// draw draws the figure onto c, with the title and notes if header.
func (f *Figure) draw(c draw.Canvas, header bool) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	const margin = 10
	y := c.Max.Y - margin
	if header {
		y = f.drawHeader(c, vg.Point{X: c.Min.X + margin, Y: y})
	}
	rows := len(f.Plots)
	if rows == 0 {
		return
	}
	cols := len(f.Plots[0])
	body := draw.Crop(c, margin, -margin, margin, y-c.Max.Y-10)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 24, PadY: 18}
	cells := plot.Align(f.Plots, tiles, body)
	for i, row := range f.Plots {
		for j, p := range row {
			if p != nil {
				p.Draw(cells[i][j])
			}
		}
	}
}

// safeDraw draws the figure, turning a panic of the plotting library (it
// panics on data it cannot place, such as a logarithmic axis without a
// positive value) into an error.
func (f *Figure) safeDraw(c draw.Canvas, header bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("pictures: drawing %q: %v", f.Title, p)
		}
	}()
	f.draw(c, header)
	return nil
}

// WriteSVG writes the figure as an SVG document, its data series as JSON in
// a <metadata id="fairslice-data"> element.
func (f *Figure) WriteSVG(w io.Writer) error {
	b, err := f.svg(true)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// svg renders the figure (with its title and notes if header) and inserts
// the metadata element after the root element's start tag.
func (f *Figure) svg(header bool) ([]byte, error) {
	width, height := f.size()
	if !header {
		height -= f.headerHeight()
	}
	c := vgsvg.New(width, height)
	if err := f.safeDraw(draw.New(c), header); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	data, err := json.Marshal(f.Data)
	if err != nil {
		return nil, fmt.Errorf("pictures: data of %q: %w", f.Title, err)
	}
	out := buf.Bytes()
	start := bytes.Index(out, []byte("<svg"))
	end := bytes.IndexByte(out[max(start, 0):], '>')
	if start < 0 || end < 0 {
		return nil, errors.New("pictures: the SVG renderer wrote no <svg> element")
	}
	at := start + end + 1
	var meta bytes.Buffer
	// json.Marshal escapes '>' as \u003e, so the data cannot end the
	// CDATA section early.
	fmt.Fprintf(&meta, "\n<title>%s</title>\n<metadata id=%q><![CDATA[%s]]></metadata>", xmlText(f.Title), MetadataID, data)
	return append(append(append([]byte{}, out[:at]...), meta.Bytes()...), out[at:]...), nil
}

func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// drawHeader writes the title and notes from pt down and returns where
// they end.
func (f *Figure) drawHeader(c draw.Canvas, pt vg.Point) vg.Length {
	title, note := headerStyle(15), headerStyle(10)
	if f.Title != "" {
		c.FillText(title, pt, f.Title)
		pt.Y -= title.Height(f.Title) + 4
	}
	for _, n := range f.Notes {
		c.FillText(note, pt, n)
		pt.Y -= note.Height(n) + 2
	}
	return pt.Y
}

// headerHeight is the height the title and notes take.
func (f *Figure) headerHeight() vg.Length {
	title, note := headerStyle(15), headerStyle(10)
	h := vg.Length(0)
	if f.Title != "" {
		h += title.Height(f.Title) + 4
	}
	for _, n := range f.Notes {
		h += note.Height(n) + 2
	}
	return h
}

// WritePNG writes the figure as a PNG image at 96 dots per inch.
func (f *Figure) WritePNG(w io.Writer) error {
	width, height := f.size()
	c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(96))}
	if err := f.safeDraw(draw.New(c), true); err != nil {
		return err
	}
	_, err := c.WriteTo(w)
	return err
}

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" lang="en">
<head>
<meta charset="utf-8"/>
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; margin-top: 1em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f4f4f4; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Notes}}<p>{{.}}</p>
{{end}}<div>{{.SVG}}</div>
{{if .Head}}<table>
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}</body>
</html>
`))

// WriteHTML writes the figure as one self-contained HTML page (well-formed
// XHTML as well): the title and notes as text, the SVG inline without
// them, and Table.
func (f *Figure) WriteHTML(w io.Writer) error {
	svg, err := f.svg(false) // the page writes the title and notes as text
	if err != nil {
		return err
	}
	// The page embeds the SVG element itself, without the XML declaration
	// and comment in front of it.
	svg = svg[bytes.Index(svg, []byte("<svg")):]
	v := struct {
		Title string
		Notes []string
		SVG   template.HTML
		Head  []string
		Rows  [][]string
	}{Title: f.Title, Notes: f.Notes, SVG: template.HTML(svg)}
	if len(f.Table) > 0 {
		v.Head, v.Rows = f.Table[0], f.Table[1:]
	}
	return page.Execute(w, v)
}

// ReadData decodes the data series embedded in an SVG document or HTML
// page written by WriteSVG or WriteHTML into v. It fails if the document
// is not well-formed XML or has no metadata element.
func ReadData(r io.Reader, v any) error {
	d := xml.NewDecoder(r)
	d.Strict = true
	d.Entity = xml.HTMLEntity
	found := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("pictures: not well-formed: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "metadata" || found {
			continue
		}
		var m struct {
			ID   string `xml:"id,attr"`
			Text string `xml:",chardata"`
		}
		if err := d.DecodeElement(&m, &se); err != nil {
			return fmt.Errorf("pictures: metadata: %w", err)
		}
		if m.ID != MetadataID {
			continue
		}
		if err := json.Unmarshal([]byte(m.Text), v); err != nil {
			return fmt.Errorf("pictures: metadata: %w", err)
		}
		found = true
	}
	if !found {
		return fmt.Errorf("pictures: no <metadata id=%q> element", MetadataID)
	}
	return nil
}
