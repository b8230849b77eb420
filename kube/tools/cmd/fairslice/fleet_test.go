package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/kube/tools/pictures"
)

// invokeFleet runs "fairslice fleet args -o json" and decodes the report.
func invokeFleet(t *testing.T, args ...string) fleetReport {
	t.Helper()
	code, stdout, stderr := invoke(append([]string{"fleet", "-o", "json"}, args...)...)
	if code != exitOK {
		t.Fatalf("fleet %q = %d, stderr:\n%s", args, code, stderr)
	}
	var r fleetReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("fleet %q: %v\n%s", args, err, stdout)
	}
	return r
}

// TestFleetUncoordinatedIsUnfair is issue 25's first bar: with one spread
// and N pinned flows, each replica is fair only among the flows it sees,
// so the spread flow gets at least 1.8 times its fair share ((N+1)/2 by
// the arithmetic) and each pinned flow about half of its own ((N+1)/(2N)).
func TestFleetUncoordinatedIsUnfair(t *testing.T) {
	for _, n := range []int{3, 5} {
		r := invokeFleet(t, "--replicas", strconv.Itoa(n), "--duration", "30s")
		if len(r.Flows) != n+1 {
			t.Fatalf("fleet --replicas %d: %d flows, want %d", n, len(r.Flows), n+1)
		}
		for _, f := range r.Flows {
			got := f.Share / f.FairShare
			switch f.Kind {
			case "spread":
				if got < 1.8 {
					t.Errorf("fleet --replicas %d: %s share/fairShare = %.3f, want at least 1.8", n, f.Name, got)
				}
			case "pinned":
				if got < 0.4 || got > 0.75 {
					t.Errorf("fleet --replicas %d: %s share/fairShare = %.3f, want about half (0.4 to 0.75)", n, f.Name, got)
				}
			default:
				t.Errorf("fleet --replicas %d: flow %s has kind %q", n, f.Name, f.Kind)
			}
		}
		if r.Jain > 0.9 {
			t.Errorf("fleet --replicas %d: jain = %.3f, want below 0.9", n, r.Jain)
		}
	}
}

// TestFleetCoordinatedIsFair is issue 25's second bar: with
// --coordinate=true every flow is within ±10% of its fair share and
// Jain's index is at least 0.95, for N = 3 and 5.
func TestFleetCoordinatedIsFair(t *testing.T) {
	for _, n := range []int{3, 5} {
		r := invokeFleet(t, "--replicas", strconv.Itoa(n), "--coordinate=true")
		if !r.Coordinate || len(r.Flows) != n+1 {
			t.Fatalf("fleet --replicas %d --coordinate=true: coordinate %v, %d flows", n, r.Coordinate, len(r.Flows))
		}
		for _, f := range r.Flows {
			if got := f.Share / f.FairShare; got < 0.9 || got > 1.1 {
				t.Errorf("fleet --replicas %d --coordinate=true: %s share/fairShare = %.3f, want 0.9 to 1.1", n, f.Name, got)
			}
		}
		if r.Jain < 0.95 {
			t.Errorf("fleet --replicas %d --coordinate=true: jain = %.3f, want at least 0.95", n, r.Jain)
		}
	}
}

// TestFleetJSONKeys checks the -o json contract's keys, exactly.
func TestFleetJSONKeys(t *testing.T) {
	code, stdout, stderr := invoke("fleet", "--replicas", "2", "--light", "1", "--duration", "5s", "-o", "json")
	if code != exitOK {
		t.Fatalf("fleet = %d, stderr:\n%s", code, stderr)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{"balancer", "coordinate", "flows", "goaway", "goaways", "goodput", "jain", "rejected", "rejectedWhileIdle",
		"rejectedWhileServersIdle", "replicas", "utilisationSpread"}
	if d := cmp.Diff(want, sortedKeys(doc)); d != "" {
		t.Errorf("fleet -o json keys (-want +got):\n%s", d)
	}
	var flows []map[string]json.RawMessage
	if err := json.Unmarshal(doc["flows"], &flows); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range flows {
		if d := cmp.Diff([]string{"fairShare", "kind", "name", "share"}, sortedKeys(f)); d != "" {
			t.Errorf("fleet -o json flow keys (-want +got):\n%s", d)
		}
		var k string
		_ = json.Unmarshal(f["kind"], &k)
		kinds = append(kinds, k)
	}
	if d := cmp.Diff([]string{"spread", "pinned", "pinned", "light"}, kinds); d != "" {
		t.Errorf("fleet --replicas 2 --light 1 kinds (-want +got):\n%s", d)
	}
	for key, want := range map[string]string{"replicas": "2", "balancer": `"round-robin"`, "coordinate": "false", "goaway": `"off"`} {
		if got := string(doc[key]); got != want {
			t.Errorf("fleet -o json %q = %s, want %s", key, got, want)
		}
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestFleetPinnedToOneReplica: every pinned flow on replica 0 and light
// flows everywhere, the balancer keeping each client's connection;
// without GOAWAY replica 0 rejects while the servers' seats idle, and
// --goaway targeted (the shipping fleet.Coordinator and
// apf.TargetedGoAway) does what users feel at least as well as the better
// of --goaway random at 0.001 and 0.02: its rejections while at least 30%
// of the servers' seats idle within 10% (+5) of the better one's, at
// least 97% of the best goodput, and fewer GOAWAYs than 0.02, with
// --coordinate=false and =true alike.
func TestFleetPinnedToOneReplica(t *testing.T) {
	args := []string{"--replicas", "3", "--spread", "0", "--pinned-to", "0", "--light", "3", "--balancer", "pinned", "--duration", "60s"}
	for _, coordinate := range []string{"--coordinate=false", "--coordinate=true"} {
		off := invokeFleet(t, append(args, coordinate)...)
		low := invokeFleet(t, append(args, coordinate, "--goaway", "random")...)
		high := invokeFleet(t, append(args, coordinate, "--goaway", "random", "--goaway-chance", "0.02")...)
		targeted := invokeFleet(t, append(args, coordinate, "--goaway", "targeted")...)
		better := min(low.RejectedWhileServersIdle, high.RejectedWhileServersIdle)
		best := max(off.Goodput, low.Goodput, high.Goodput, targeted.Goodput)
		t.Logf("%s: rejected while the servers idle: off %d, random %d and %d, targeted %d; goodput %.1f, %.1f, %.1f, %.1f; GOAWAYs targeted %d, random 0.02 %d",
			coordinate, off.RejectedWhileServersIdle, low.RejectedWhileServersIdle, high.RejectedWhileServersIdle, targeted.RejectedWhileServersIdle,
			off.Goodput, low.Goodput, high.Goodput, targeted.Goodput, targeted.GoAways, high.GoAways)
		if off.RejectedWhileServersIdle < 1000 {
			t.Errorf("%s: GOAWAY off rejected %d while the servers idled, want at least 1000", coordinate, off.RejectedWhileServersIdle)
		}
		if float64(targeted.RejectedWhileServersIdle) > 1.1*float64(better)+5 || targeted.Goodput < 0.97*best || targeted.GoAways >= high.GoAways {
			t.Errorf("%s: targeted rejected %d while the servers idled, served %.1f, closed %d; want at most 10%% (+5) over %d, at least 97%% of %.1f, fewer than %d",
				coordinate, targeted.RejectedWhileServersIdle, targeted.Goodput, targeted.GoAways, better, best, high.GoAways)
		}
	}
}

// TestFleetGoAwayChance: --goaway-chance sets random GOAWAY's chance per
// request; 0.02 closes more connections than the default 0.001.
func TestFleetGoAwayChance(t *testing.T) {
	args := []string{"--replicas", "3", "--spread", "0", "--pinned-to", "0", "--light", "3", "--balancer", "pinned", "--duration", "30s", "--goaway", "random"}
	low := invokeFleet(t, args...)
	high := invokeFleet(t, append(args, "--goaway-chance", "0.02")...)
	if low.GoAways == 0 || high.GoAways <= 5*low.GoAways {
		t.Errorf("fleet %q: goaways %d at the default chance, %d at 0.02; want some, and many more at 0.02", args, low.GoAways, high.GoAways)
	}
	if low.Goodput <= 0 || high.Goodput <= 0 {
		t.Errorf("fleet %q: goodput %v and %v, want positive", args, low.Goodput, high.Goodput)
	}
}

// TestFleetCapsWait: --caps-wait makes the coordinated pinned scenario's
// capped flows wait: fewer rejections and more goodput than caps that
// refuse.
func TestFleetCapsWait(t *testing.T) {
	args := []string{"--replicas", "3", "--spread", "0", "--pinned-to", "0", "--light", "3", "--goaway", "targeted", "--coordinate=true"}
	refusing := invokeFleet(t, args...)
	waiting := invokeFleet(t, append(args, "--caps-wait")...)
	if waiting.Rejected >= refusing.Rejected || waiting.Goodput <= refusing.Goodput {
		t.Errorf("fleet %q --caps-wait: rejected %d, goodput %.2f; want fewer than %d and more than %.2f",
			args, waiting.Rejected, waiting.Goodput, refusing.Rejected, refusing.Goodput)
	}
}

func TestFleetIsDeterministic(t *testing.T) {
	args := []string{"fleet", "--replicas", "2", "--duration", "5s", "--goaway", "random", "--balancer", "pinned", "--seed", "7"}
	_, a, _ := invoke(args...)
	_, b, _ := invoke(args...)
	if a != b || a == "" {
		t.Errorf("fleet %q twice:\n%s\nthen\n%s", args, a, b)
	}
}

func TestFleetRefusesBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--replicas", "0"}, exitUsage, "--replicas 0"},
		{[]string{"--replicas", "17"}, exitUsage, "--replicas 17"},
		{[]string{"--pinned-to", "3"}, exitUsage, "--pinned-to 3"},
		{[]string{"--balancer", "random"}, exitUsage, `--balancer "random"`},
		{[]string{"--goaway", "sometimes"}, exitUsage, `--goaway "sometimes"`},
		{[]string{"--duration", "0s"}, exitUsage, "--duration 0s"},
		{[]string{"--goaway-chance", "0.03"}, exitUsage, "--goaway-chance 0.03"},
		{[]string{"--goaway-chance", "0"}, exitUsage, "--goaway-chance 0"},
		{[]string{"--workers", "-1"}, exitUsage, "--workers -1"},
		{[]string{"--spread", "0", "--pinned", "0"}, exitUsage, "no flows"},
		{[]string{"extra"}, exitUsage, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		code, _, stderr := invoke(append([]string{"fleet"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("fleet %q = %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}

// TestFleetPicture: --svg draws the run printed and the other one, the
// uncoordinated run left, whichever was asked for.
func TestFleetPicture(t *testing.T) {
	for _, coordinate := range []string{"--coordinate=false", "--coordinate=true"} {
		dir := t.TempDir()
		svg := filepath.Join(dir, "fleet.svg")
		code, stdout, stderr := invoke("fleet", "--replicas", "2", "--duration", "45s", coordinate, "-o", "json", "--svg", svg)
		if code != exitOK {
			t.Fatalf("fleet %s --svg = %d, stderr:\n%s", coordinate, code, stderr)
		}
		b, err := os.ReadFile(svg)
		if err != nil {
			t.Fatal(err)
		}
		checkSVG(t, svg, b)
		var data pictures.FleetData
		if err := pictures.ReadData(bytes.NewReader(b), &data); err != nil {
			t.Fatal(err)
		}
		var r fleetReport
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		if len(data.Runs) != 2 || data.Runs[0].Label != "uncoordinated" || data.Runs[1].Label != "coordinated" {
			t.Fatalf("fleet %s --svg runs = %+v, want uncoordinated then coordinated", coordinate, data.Runs)
		}
		printed := 0
		if r.Coordinate {
			printed = 1
		}
		if d := cmp.Diff(fleetRunOf(r), data.Runs[printed]); d != "" {
			t.Errorf("fleet %s --svg: the printed run (-printed +drawn):\n%s", coordinate, d)
		}
		if data.Runs[1].Jain <= data.Runs[0].Jain {
			t.Errorf("fleet %s --svg: coordinated Jain %.3f, uncoordinated %.3f; want the coordinated one higher",
				coordinate, data.Runs[1].Jain, data.Runs[0].Jain)
		}
	}
}

// TestFleetMatrixRunsEverySteering: each cell runs uncoordinated and
// coordinated, under the four steerings in order, and the verdict
// compares targeted against them as the bars say.
func TestFleetMatrixRunsEverySteering(t *testing.T) {
	ff := fleetFlags{duration: 15 * time.Second, seed: 1}
	rep, err := ff.runMatrix([]matrixCell{{Replicas: 3, Pinned: 2, Light: 1, Spread: true, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	// --seed S moves the cell's seed by S-1: the cell of seed 1 under
	// --seed 6 is the cell of seed 6 under --seed 1.
	ff.seed = 6
	moved, err := ff.runMatrix([]matrixCell{{Replicas: 3, Pinned: 2, Light: 1, Spread: true, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ff.seed = 1
	same, err := ff.runMatrix([]matrixCell{{Replicas: 3, Pinned: 2, Light: 1, Spread: true, Seed: 6}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(same, moved); d != "" || cmp.Equal(rep, moved) {
		t.Errorf("--seed 6 on a cell of seed 1: differs from the cell of seed 6 (-want +got):\n%s\nor equals seed 1's", d)
	}
	if len(rep.Rows) != 2 || rep.Rows[0].Coordinate || !rep.Rows[1].Coordinate {
		t.Fatalf("runMatrix(one cell) rows = %+v, want uncoordinated then coordinated", rep.Rows)
	}
	for _, r := range rep.Rows {
		var names []string
		for _, run := range r.Runs {
			names = append(names, run.Steering)
		}
		if d := cmp.Diff([]string{"off", "random 0.001", "random 0.02", "targeted"}, names); d != "" {
			t.Errorf("coordinate %t: steerings (-want +got):\n%s", r.Coordinate, d)
		}
		if r.Runs[2].GoAways <= r.Runs[1].GoAways {
			t.Errorf("coordinate %t: random 0.02 closed %d connections, random 0.001 %d; want more at 0.02", r.Coordinate, r.Runs[2].GoAways, r.Runs[1].GoAways)
		}
	}
	row := matrixRow{Runs: []matrixRun{
		{Steering: "off", Goodput: 100},
		{Steering: "random 0.001", RejectedWhileServersIdle: 100, Goodput: 90, GoAways: 10},
		{Steering: "random 0.02", RejectedWhileServersIdle: 50, Goodput: 95, GoAways: 100},
		{Steering: "targeted", RejectedWhileServersIdle: 60, Jain: 0.95, Goodput: 96.9, GoAways: 100},
	}}
	if got := row.verdict().String(); got != "RJ--" {
		t.Errorf("verdict(60 vs 50 rejections, Jain 0.95, goodput 96.9 of 100, as many GOAWAYs) = %s, want RJ--", got)
	}
	row.Runs[3].RejectedWhileServersIdle, row.Runs[3].Goodput, row.Runs[3].GoAways = 61, 97, 99
	if got := row.verdict().String(); got != "-JGA" {
		t.Errorf("verdict(61 vs 50 rejections, goodput 97 of 100, fewer GOAWAYs) = %s, want -JGA", got)
	}
}

// TestFleetMatrixMeetsTheBars runs the whole steering matrix on its own
// seeds and on seeds 300 further on (--seed 301), which the steering was
// not tuned on, and requires what the package doc of apf/fleet and
// BENCHMARKS.md claim, per mode: targeted steering's rejections while the
// servers idle within 10% (+5) of the better random setting's in at least
// 8 of 10 cells, Jain at least 0.95 in 9, goodput at least 97% of the best
// in 9, and fewer GOAWAYs than random 0.02 in every cell.
func TestFleetMatrixMeetsTheBars(t *testing.T) {
	for _, seed := range []uint64{1, 301} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			matrixMeetsTheBars(t, seed)
		})
	}
}

// matrixMeetsTheBars runs the matrix with --seed seed and checks the bars.
func matrixMeetsTheBars(t *testing.T, seed uint64) {
	rep, err := fleetFlags{duration: time.Minute, seed: seed}.runMatrix(steeringMatrix)
	if err != nil {
		t.Fatal(err)
	}
	met := map[bool][4]int{}
	for _, r := range rep.Rows {
		v, m := r.verdict(), met[r.Coordinate]
		for i, ok := range []bool{v.rejections, v.jain, v.goodput, v.goaways} {
			if ok {
				m[i]++
			}
		}
		met[r.Coordinate] = m
	}
	for _, coordinate := range []bool{false, true} {
		m := met[coordinate]
		t.Logf("--seed %d, coordinate %t: cells met of 10: R %d, J %d, G %d, A %d", seed, coordinate, m[0], m[1], m[2], m[3])
		if m[0] < 8 || m[1] < 9 || m[2] < 9 || m[3] < 10 {
			t.Errorf("--seed %d, coordinate %t: targeted meets R in %d, J in %d, G in %d, A in %d cells of 10; want at least 8, 9, 9 and 10",
				seed, coordinate, m[0], m[1], m[2], m[3])
		}
	}
}
