package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairslice/fairslice/fairqueue/scenario"
	"github.com/fairslice/fairslice/kube/tools/pictures"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The README's pictures, docs/img/*.svg, are written by these commands
// (paths relative to kube/tools/). Regenerate them with
//
//	cd kube/tools && go test ./cmd/fairslice -run TestReadmePictures -pictures.update
var readmePictures = []struct {
	file string
	args []string
}{
	{"simulate.svg", []string{"simulate", "../../docs/img/noisy-neighbour.json"}},
	{"propagation.svg", []string{"propagation", "--pods", "20000", "--nodes", "5000"}},
	{"hints.svg", []string{"hints", "cmd/fairslice/testdata/hints-eleven.yaml"}},
	{"odds.svg", []string{"odds"}},
}

var picturesUpdate = flag.Bool("pictures.update", false, "rewrite ../../docs/img/*.svg (the README's pictures)")

// TestReadmePictures checks that the committed pictures are what the
// commands draw today.
func TestReadmePictures(t *testing.T) {
	// The commands run from kube/tools/, as the README shows them.
	t.Chdir("../..")
	for _, p := range readmePictures {
		got := filepath.Join(t.TempDir(), p.file)
		args := append(slices.Clone(p.args), "--svg", got)
		if code, _, stderr := invoke(args...); code != exitOK {
			t.Fatalf("fairslice %s = %d, stderr:\n%s", strings.Join(args, " "), code, stderr)
		}
		b, err := os.ReadFile(got)
		if err != nil {
			t.Fatal(err)
		}
		checkSVG(t, p.file, b)
		if len(b) > 80_000 {
			t.Errorf("%s is %d bytes; keep the README's pictures under 80 kB", p.file, len(b))
		}
		want := filepath.Join("..", "..", "docs", "img", p.file)
		if *picturesUpdate {
			if err := os.WriteFile(want, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		w, err := os.ReadFile(want)
		if err != nil || !bytes.Equal(w, b) {
			t.Errorf("%s is not what fairslice %s draws today (err %v); regenerate with: cd kube/tools && go test ./cmd/fairslice -run TestReadmePictures -pictures.update",
				want, strings.Join(p.args, " "), err)
		}
	}
}

// checkSVG checks that b is a well-formed SVG document: strict XML whose
// root is an <svg> element in the SVG namespace with a size and a
// viewBox, holding the data of the picture.
func checkSVG(t *testing.T, name string, b []byte) {
	t.Helper()
	var root *xml.StartElement
	depth := walkXML(t, name, b, func(e xml.StartElement) {
		if root == nil {
			root = &e
		}
	})
	if root == nil || root.Name.Local != "svg" || root.Name.Space != "http://www.w3.org/2000/svg" {
		t.Fatalf("%s: root element %v, want svg in the SVG namespace", name, root)
	}
	attrs := map[string]string{}
	for _, a := range root.Attr {
		attrs[a.Name.Local] = a.Value
	}
	for _, a := range []string{"width", "height", "viewBox"} {
		if attrs[a] == "" {
			t.Errorf("%s: <svg> has no %s", name, a)
		}
	}
	if depth != 0 {
		t.Errorf("%s: %d elements left open", name, depth)
	}
	var data any
	if err := pictures.ReadData(bytes.NewReader(b), &data); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

// walkXML parses b as strict XML (with HTML's entities), calling start for
// every start element, and returns how many elements were left open.
func walkXML(t *testing.T, name string, b []byte, start func(xml.StartElement)) (depth int) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return depth
		}
		if err != nil {
			t.Errorf("%s: not well-formed: %v", name, err)
			return depth
		}
		switch e := tok.(type) {
		case xml.StartElement:
			start(e)
			depth++
		case xml.EndElement:
			depth--
		}
	}
}

// checkHTML checks that b is one self-contained page: well-formed (XHTML),
// an <html> root with a <title>, the picture inline as <svg>, and nothing
// loaded from elsewhere.
func checkHTML(t *testing.T, name string, b []byte) {
	t.Helper()
	var names []string
	walkXML(t, name, b, func(e xml.StartElement) {
		names = append(names, e.Name.Local)
		for _, a := range e.Attr {
			if (a.Name.Local == "src" || a.Name.Local == "href") && !strings.HasPrefix(a.Value, "#") {
				t.Errorf("%s: <%s %s=%q> loads from elsewhere", name, e.Name.Local, a.Name.Local, a.Value)
			}
		}
	})
	if !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) || len(names) == 0 || names[0] != "html" {
		t.Errorf("%s: want a <!DOCTYPE html> page with an <html> root, got elements %v", name, names[:min(len(names), 3)])
	}
	for _, want := range []string{"head", "title", "body", "svg", "table"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s: no <%s> element", name, want)
		}
	}
}

// readPicture decodes the data of a written picture after checking the
// file.
func readPicture(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(file, ".html") {
		checkHTML(t, file, b)
	} else {
		checkSVG(t, file, b)
	}
	if err := pictures.ReadData(bytes.NewReader(b), v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// printedResult is one line of "fairslice simulate" output.
type printedResult struct {
	ID           string `json:"id"`
	Outcome      string `json:"outcome"`
	Reason       string `json:"reason"`
	DispatchedAt string `json:"dispatchedAt"`
}

func parseResults(t *testing.T, stdout string) []printedResult {
	t.Helper()
	var out []printedResult
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "{") {
			continue
		}
		var r printedResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// summaryRows returns the rows of the printed summary by hash, without
// the hash: requests, dispatched, rejected, timed out, waiting,
// seat-seconds, req/s, wait p50, p90, p99.
func summaryRows(stdout string) map[uint64][]string {
	rows := map[uint64][]string{}
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) != 11 {
			continue
		}
		if h, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			rows[h] = f[1:]
		}
	}
	return rows
}

// TestSimulatePicture ties every series of the simulation picture to the
// results and summary "fairslice simulate" prints for the same file: the
// counts over time are recomputed from the printed dispatch times and
// outcomes, independently of the picture's code.
func TestSimulatePicture(t *testing.T) {
	tests := []struct {
		file    string
		flags   []string
		engines []string
	}{
		{"testdata/simulate-fair.json", nil, []string{"fairslice"}},
		{"testdata/simulate-modes.json", []string{"--upstream"}, []string{"upstream"}},
		{"../../../../docs/img/noisy-neighbour.json", []string{"--compare"}, []string{"fairslice", "upstream"}},
		{"../../../../docs/img/noisy-neighbour.json", []string{"--upstream", "--compare"}, []string{"upstream", "fairslice"}},
	}
	for _, tt := range tests {
		if upstreamUnavailable(tt.flags) || (!upstreamBuilt && slices.Contains(tt.flags, "--compare")) {
			continue // --upstream and --compare run upstream's QueueSet: -tags upstream
		}
		dir := t.TempDir()
		svg, html := filepath.Join(dir, "sim.svg"), filepath.Join(dir, "sim.html")
		args := append(append([]string{"--summary", tt.file, "--svg", svg}, tt.flags...), "--html", html)
		code, _, stderr := invokeSimulate("", args...)
		if code != exitOK {
			t.Fatalf("simulate %q = %d, stderr:\n%s", args, code, stderr)
		}
		f, err := os.Open(tt.file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenario.Parse(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range []string{svg, html} {
			var data pictures.SimulationData
			readPicture(t, file, &data)
			if len(data.Runs) != len(tt.engines) {
				t.Fatalf("simulate %q: %s has %d runs, want %d", args, file, len(data.Runs), len(tt.engines))
			}
			for i, run := range data.Runs {
				if run.Engine != tt.engines[i] {
					t.Errorf("simulate %q: run %d engine = %q, want %q", args, i, run.Engine, tt.engines[i])
				}
				// Each run against what "simulate" prints for its engine.
				printArgs := []string{"--summary", tt.file}
				if run.Engine == "upstream" {
					printArgs = append(printArgs, "--upstream")
				}
				_, stdout, _ := invokeSimulate("", printArgs...)
				checkSimulationRun(t, fmt.Sprintf("simulate %q run %d", args, i), s, parseResults(t, stdout), summaryRows(stdout), run)
			}
		}
	}
}

func checkSimulationRun(t *testing.T, what string, s *scenario.Scenario, printed []printedResult, summary map[uint64][]string, run pictures.SimulationRun) {
	t.Helper()
	if len(printed) != len(s.Requests) {
		t.Fatalf("%s: %d printed results for %d requests", what, len(printed), len(s.Requests))
	}
	if len(run.Flows)+run.Omitted != len(summary) {
		t.Errorf("%s: %d flows drawn + %d omitted, the summary has %d", what, len(run.Flows), run.Omitted, len(summary))
	}
	for _, fl := range run.Flows {
		row, ok := summary[fl.Hash]
		if !ok {
			t.Errorf("%s: flow %d is not in the summary", what, fl.Hash)
			continue
		}
		var dispatches, waits []float64
		var rejections []pictures.Mark
		type interval struct{ from, to float64 }
		var waiting, executing []interval
		for i, req := range s.Requests {
			if req.Hash != fl.Hash {
				continue
			}
			p := printed[i]
			arrival := req.Arrival.Seconds()
			switch {
			case p.Outcome == "dispatched":
				d, err := time.ParseDuration(p.DispatchedAt)
				if err != nil {
					t.Fatal(err)
				}
				dispatches = append(dispatches, d.Seconds())
				waits = append(waits, (d - req.Arrival).Seconds())
				waiting = append(waiting, interval{arrival, d.Seconds()})
				executing = append(executing, interval{d.Seconds(), (d + req.Duration).Seconds()})
			case p.Reason == "time-out":
				end := (req.Arrival + req.WaitLimit).Seconds()
				rejections = append(rejections, pictures.Mark{T: end, Reason: p.Reason})
				waiting = append(waiting, interval{arrival, end})
			case p.Outcome == "rejected":
				rejections = append(rejections, pictures.Mark{T: arrival, Reason: p.Reason})
			default:
				waiting = append(waiting, interval{arrival, math.Inf(1)})
			}
		}
		slices.Sort(waits)
		if diff := cmp.Diff(dispatches, fl.Dispatches, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: flow %d dispatches (-printed +drawn):\n%s", what, fl.Hash, diff)
		}
		if diff := cmp.Diff(waits, fl.Waits, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: flow %d waits (-printed +drawn):\n%s", what, fl.Hash, diff)
		}
		if diff := cmp.Diff(rejections, fl.Rejections, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: flow %d rejections (-printed +drawn):\n%s", what, fl.Hash, diff)
		}
		// The summary's counts and median against the drawn series.
		want := fmt.Sprintf("%d %d", len(fl.Dispatches), len(fl.Rejections))
		dis, _ := strconv.Atoi(row[1])
		rej, _ := strconv.Atoi(row[2])
		tim, _ := strconv.Atoi(row[3])
		if got := fmt.Sprintf("%d %d", dis, rej+tim); got != want {
			t.Errorf("%s: flow %d summary dispatched, rejected+timed out = %s, drawn %s", what, fl.Hash, got, want)
		}
		if len(fl.Waits) > 0 {
			p50 := time.Duration(math.Round(fl.Waits[(len(fl.Waits)+1)/2-1] * 1e9))
			if p50.String() != row[7] {
				t.Errorf("%s: flow %d drawn median wait %v, summary prints %s", what, fl.Hash, p50, row[7])
			}
		}
		// The step series, at every step and between steps.
		count := func(iv []interval, at float64) int {
			n := 0
			for _, x := range iv {
				if x.from <= at && at < x.to {
					n++
				}
			}
			return n
		}
		for name, series := range map[string]struct {
			drawn []pictures.Point
			iv    []interval
		}{"waiting": {fl.Waiting, waiting}, "executing": {fl.Executing, executing}} {
			pts := series.drawn
			if len(pts) == 0 || pts[0].T != 0 || pts[len(pts)-1].T != run.Span {
				t.Errorf("%s: flow %d %s series %v does not run from 0 to the span %v", what, fl.Hash, name, pts, run.Span)
				continue
			}
			for k, p := range pts[:len(pts)-1] {
				mid := (p.T + pts[k+1].T) / 2
				for _, at := range []float64{p.T, mid} {
					if want := count(series.iv, at); p.N != want {
						t.Errorf("%s: flow %d %s at %vs = %d drawn, %d from the printed results", what, fl.Hash, name, at, p.N, want)
					}
				}
			}
		}
	}
}

// TestSimulateCompareNeedsPicture checks that --compare alone is a usage
// error.
func TestSimulateCompareNeedsPicture(t *testing.T) {
	code, stdout, stderr := invokeSimulate("", "--compare", "testdata/simulate-fair.json")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "--compare needs --svg or --html") {
		t.Errorf("simulate --compare = %d, %q, %q; want %d, no output, a message", code, stdout, stderr, exitUsage)
	}
}

// parseBytes reads a human byte count as "fairslice propagation" prints it
// ("12.8 KB", "540 B").
func parseBytes(t *testing.T, s string) float64 {
	t.Helper()
	num, unit, _ := strings.Cut(s, " ")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		t.Fatalf("byte count %q: %v", s, err)
	}
	scale := map[string]float64{"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15, "EB": 1e18}[unit]
	if scale == 0 {
		t.Fatalf("byte count %q: unknown unit", s)
	}
	return v * scale
}

// propagationCells returns, for a row label of the printed table, the
// protobuf byte count of each design.
func propagationCells(t *testing.T, table, label string) []float64 {
	t.Helper()
	re := regexp.MustCompile(`(\d[\d.]* [KMGTPE]?B) \(`)
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), label) {
			var out []float64
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				out = append(out, parseBytes(t, m[1]))
			}
			return out
		}
	}
	t.Fatalf("no row %q in\n%s", label, table)
	return nil
}

// TestPropagationPicture ties the propagation picture to the tables
// "fairslice propagation" prints for every pod count it draws.
func TestPropagationPicture(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "prop.svg")
	html := filepath.Join(t.TempDir(), "prop.html")
	if code, _, stderr := invoke("propagation", "--pods", "500", "--nodes", "100", "--svg", svg, "--html", html); code != exitOK {
		t.Fatalf("propagation --svg = %d: %s", code, stderr)
	}
	for _, file := range []string{svg, html} {
		var d pictures.PropagationData
		readPicture(t, file, &d)
		if want := []int{1, 2, 5, 10, 20, 50, 100, 200, 500}; !slices.Equal(d.Pods, want) || d.Nodes != 100 {
			t.Fatalf("%s: pods %v, nodes %d; want %v, 100", file, d.Pods, d.Nodes, want)
		}
		if len(d.Designs) != 3 {
			t.Fatalf("%s: %d designs, want 3", file, len(d.Designs))
		}
		for i, pods := range d.Pods {
			code, table, stderr := invoke("propagation", "--pods", strconv.Itoa(pods), "--nodes", "100")
			if code != exitOK {
				t.Fatalf("propagation --pods %d = %d: %s", pods, code, stderr)
			}
			for _, row := range []struct {
				label string
				drawn func(pictures.DesignSeries) float64
			}{
				{"largest object", func(s pictures.DesignSeries) float64 { return s.LargestObject[i] }},
				{"rolling update: bytes written", func(s pictures.DesignSeries) float64 { return s.RollingWritten[i] }},
				{"rolling update: bytes sent", func(s pictures.DesignSeries) float64 { return s.RollingSent[i] }},
			} {
				printed := propagationCells(t, table, row.label)
				for k, s := range d.Designs {
					// The table prints three significant digits.
					if got := row.drawn(s); math.Abs(got-printed[k]) > 0.005*got+0.5 {
						t.Errorf("%s: %s at %d pods, %s = %v drawn, %v printed", file, row.label, pods, s.Name, got, printed[k])
					}
				}
			}
			if want := fmt.Sprintf("limit at %d pods", d.EtcdLimitPods); !strings.Contains(table, want) {
				t.Errorf("%s: etcd limit at %d pods drawn; the table says otherwise:\n%s", file, d.EtcdLimitPods, table)
			}
		}
	}
}

// printedHints is the JSON "fairslice hints" prints.
type printedHints struct {
	Enabled     bool           `json:"enabled"`
	Reason      string         `json:"reason"`
	HintsByZone map[string]int `json:"hintsByZone"`
	CrossZone   int            `json:"crossZone"`
}

// TestHintsPicture ties both panels of the hints picture to what
// "fairslice hints" prints for the same file with upstream's allocator
// (or --upstream) and with --min-cross-zone.
func TestHintsPicture(t *testing.T) {
	files, _ := filepath.Glob("testdata/hints-*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/hints-*.yaml")
	}
	printed := func(args ...string) printedHints {
		code, stdout, stderr := invoke(append([]string{"hints"}, args...)...)
		if code != exitOK {
			t.Fatalf("hints %q = %d: %s", args, code, stderr)
		}
		var p printedHints
		if err := json.Unmarshal([]byte(stdout), &p); err != nil {
			t.Fatalf("hints %q printed %q: %v", args, stdout, err)
		}
		return p
	}
	for _, name := range files {
		for _, flags := range [][]string{nil, {"--upstream"}, {"--min-cross-zone"}} {
			if upstreamUnavailable(flags) {
				continue
			}
			svg := filepath.Join(t.TempDir(), "hints.svg")
			args := append(slices.Clone(flags), name, "--svg", svg)
			if code, _, stderr := invoke(append([]string{"hints"}, args...)...); code != exitOK {
				t.Fatalf("hints %q = %d: %s", args, code, stderr)
			}
			var d pictures.HintsData
			readPicture(t, svg, &d)
			left := []string{name}
			if len(flags) > 0 && flags[0] == "--upstream" {
				left = []string{"--upstream", name}
			}
			wants := []printedHints{printed(left...), printed("--min-cross-zone", name)}
			if len(d.Runs) != 2 {
				t.Fatalf("hints %q: %d panels, want 2", args, len(d.Runs))
			}
			for i, run := range d.Runs {
				got := printedHints{Enabled: run.Enabled, Reason: run.Reason, HintsByZone: map[string]int{}, CrossZone: run.CrossZone}
				total, expected := 0, 0.0
				for _, z := range run.Zones {
					if z.Hints > 0 {
						got.HintsByZone[z.Zone] = z.Hints
					}
					total += z.Endpoints
					expected += z.Expected
					if math.Abs(z.Minimum*1.2-z.Expected) > 1e-9 {
						t.Errorf("hints %q panel %d zone %s: band %v..%v is not 20%%", args, i, z.Zone, z.Minimum, z.Expected)
					}
				}
				if diff := cmp.Diff(wants[i], got); diff != "" {
					t.Errorf("hints %q panel %d (%s) (-printed +drawn):\n%s", args, i, run.Allocator, diff)
				}
				if expected != 0 && math.Abs(expected-float64(total)) > 1e-9 {
					t.Errorf("hints %q panel %d: expected shares sum to %v, ready endpoints %d", args, i, expected, total)
				}
				if !run.Enabled {
					if b, _ := os.ReadFile(svg); !bytes.Contains(b, []byte(xmlEscape(run.Reason))) {
						t.Errorf("hints %q: the reason %q is not written on the picture", args, run.Reason)
					}
				}
			}
		}
	}
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// TestOddsPicture ties the odds picture's points to the table "fairslice
// odds --json" prints and every curve to the table printed for its deck
// over the curve's hand sizes.
func TestOddsPicture(t *testing.T) {
	for _, flags := range [][]string{nil, {"--config", "64x8,128x6", "--elephants", "0,2,8"}} {
		svg := filepath.Join(t.TempDir(), "odds.svg")
		args := append([]string{"odds", "--json", "--svg", svg}, flags...)
		code, stdout, stderr := invoke(args...)
		if code != exitOK {
			t.Fatalf("%q = %d: %s", args, code, stderr)
		}
		var table []oddsRow
		if err := json.Unmarshal([]byte(stdout), &table); err != nil {
			t.Fatal(err)
		}
		var d pictures.OddsData
		readPicture(t, svg, &d)
		var want []pictures.OddsPoint
		for _, r := range table {
			for i, e := range r.Elephants {
				want = append(want, pictures.OddsPoint{Queues: r.Queues, Hand: r.Hand, Elephants: e, Probability: r.Probabilities[i]})
			}
		}
		if diff := cmp.Diff(want, d.Points); diff != "" {
			t.Errorf("%q points (-printed +drawn):\n%s", args, diff)
		}
		if len(d.Curves) == 0 {
			t.Fatalf("%q: no curves", args)
		}
		for _, c := range d.Curves {
			hands := make([]string, len(c.Probabilities))
			for h := range hands {
				hands[h] = strconv.Itoa(h + 1)
			}
			_, out, _ := invoke("odds", "--json", "--queues", strconv.Itoa(c.Queues), "--hand", strings.Join(hands, ","), "--elephants", strconv.Itoa(c.Elephants))
			var rows []oddsRow
			if err := json.Unmarshal([]byte(out), &rows); err != nil {
				t.Fatal(err)
			}
			var printed []float64
			for _, r := range rows {
				printed = append(printed, r.Probabilities[0])
			}
			if diff := cmp.Diff(printed, c.Probabilities); diff != "" {
				t.Errorf("%q curve %d queues, %d elephants (-printed +drawn):\n%s", args, c.Queues, c.Elephants, diff)
			}
		}
	}
}
