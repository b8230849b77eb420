package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The golden files testdata/simulate-*.golden hold the expected stdout of
// "fairslice simulate" for each testdata/simulate-*.json, identical for both
// engines. Regenerate them from upstream with
//
//	go test -tags upstream ./tools/cmd/fairslice -run TestSimulateGolden -simulate.update
//
// and review the diff: the outputs were checked by hand when written.
var simulateUpdate = flag.Bool("simulate.update", false, "rewrite testdata/simulate-*.golden from --upstream output")

func invokeSimulate(stdinText string, args ...string) (code int, stdout, stderr string) {
	old := stdin
	defer func() { stdin = old }()
	stdin = strings.NewReader(stdinText)
	var out, errOut bytes.Buffer
	code = runSimulate(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestSimulateGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/simulate-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/simulate-*.json (err %v)", err)
	}
	for _, name := range files {
		golden := strings.TrimSuffix(name, ".json") + ".golden"
		if *simulateUpdate {
			code, stdout, stderr := invokeSimulate("", "--upstream", name)
			if code != exitOK {
				t.Fatalf("simulate --upstream %s = %d, stderr:\n%s", name, code, stderr)
			}
			if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{name}, {"--upstream", name}, {name, "--upstream"}} {
			if upstreamUnavailable(args) {
				continue
			}
			code, stdout, stderr := invokeSimulate("", args...)
			if code != exitOK || stdout != string(want) {
				t.Errorf("simulate %q = %d, stdout:\n%swant 0, stdout:\n%sstderr:\n%s", args, code, stdout, want, stderr)
			}
			upstream := args[0] == "--upstream" || len(args) > 1
			if hasSummary := strings.Contains(stderr, "fairness index"); hasSummary == upstream {
				t.Errorf("simulate %q stderr = %q; want the summary there only without --upstream", args, stderr)
			}
		}
	}
}

// TestSimulateExample checks the example of the file-format contract
// literally.
func TestSimulateExample(t *testing.T) {
	const in = `{"config": {"queues": 8, "handSize": 2, "queueLengthLimit": 10, "concurrencyLimit": 1}, "requests": [{"id": "A1", "arrival": "0s", "hash": 1001, "initialSeats": 1, "finalSeats": 0, "additionalLatency": "0s", "duration": "1s", "waitLimit": "0s"}]}`
	// Hash 1001 deals [1 6] from 8 queues; both are empty, so the first
	// card of the hand wins.
	const want = `{"id":"A1","outcome":"dispatched","reason":"","queue":1,"dispatchedAt":"0s"}` + "\n"
	for _, args := range [][]string{{"-"}, {"--upstream", "-"}} {
		if upstreamUnavailable(args) {
			continue
		}
		code, stdout, stderr := invokeSimulate(in, args...)
		if code != exitOK || stdout != want {
			t.Errorf("simulate %q = %d, %q, want 0, %q; stderr:\n%s", args, code, stdout, want, stderr)
		}
	}
}

func TestSimulateSummaryFlag(t *testing.T) {
	code, stdout, stderr := invokeSimulate("", "--summary", "testdata/simulate-fair.json")
	if code != exitOK {
		t.Fatalf("simulate --summary = %d, stderr:\n%s", code, stderr)
	}
	want, _ := os.ReadFile("testdata/simulate-fair.golden")
	rest, ok := strings.CutPrefix(stdout, string(want))
	if !ok || !strings.Contains(rest, "Jain's fairness index") || !strings.Contains(rest, "wait p99") {
		t.Errorf("simulate --summary stdout = %q, want the results then the summary", stdout)
	}
	if stderr != "" {
		t.Errorf("simulate --summary stderr = %q, want empty", stderr)
	}
}

func TestSimulateErrors(t *testing.T) {
	const cfg = `"config": {"queues": 8, "handSize": 2, "queueLengthLimit": 10, "concurrencyLimit": 1}`
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		want     []string
	}{
		{"no file", "", nil, exitUsage, []string{"missing scenario file"}},
		{"two files", "", []string{"a.json", "b.json"}, exitUsage, []string{"expected one scenario file, got 2"}},
		{"bad flag", "", []string{"--nope", "x.json"}, exitUsage, []string{"flag provided but not defined: -nope"}},
		{"missing file", "", []string{"testdata/does-not-exist.json"}, exitFailure, []string{"does-not-exist.json"}},
		{"syntax", `{"config":`, []string{"-"}, exitFailure, []string{"standard input", "unexpected EOF"}},
		{"unknown field", `{` + cfg + `, "requests": [{"id": "A", "arrival": "0s", "hash": 1, "duration": "1s", "colour": "red"}]}`,
			[]string{"-"}, exitFailure, []string{`requests[0] (id "A"): unknown field "colour"`}},
		{"negative hash", `{` + cfg + `, "requests": [{"id": "A", "arrival": "0s", "hash": -1, "duration": "1s"}]}`,
			[]string{"-"}, exitFailure, []string{`requests[0] (id "A"): hash: must be an unsigned 64-bit integer literal or a string holding one in decimal or 0x-hexadecimal, got -1`}},
		{"bad hex hash", `{` + cfg + `, "requests": [{"id": "A", "arrival": "0s", "hash": "0xdeadbeefg", "duration": "1s"}]}`,
			[]string{"-"}, exitFailure, []string{`requests[0] (id "A"): hash: "0xdeadbeefg" is not a decimal or 0x-hexadecimal number`}},
		{"hash too big", `{` + cfg + `, "requests": [{"id": "A", "arrival": "0s", "hash": 18446744073709551616, "duration": "1s"}]}`,
			[]string{"-"}, exitFailure, []string{`hash: 18446744073709551616 does not fit in 64 bits`}},
		{"negative duration", `{` + cfg + `, "requests": [{"id": "A", "arrival": "0s", "hash": 1, "duration": "-1s"}]}`,
			[]string{"-"}, exitFailure, []string{`requests[0] (id "A"): duration: negative duration "-1s"`}},
		{"duplicate id", `{` + cfg + `, "requests": [{"id": "A", "arrival": "0s", "hash": 1, "duration": "1s"}, {"id": "A", "arrival": "0s", "hash": 1, "duration": "1s"}]}`,
			[]string{"-"}, exitFailure, []string{`requests[1]: duplicate id "A" (also requests[0])`}},
		{"bad config", `{"config": {"queues": 8, "handSize": 9, "queueLengthLimit": -1, "concurrencyLimit": 1}, "requests": []}`,
			[]string{"-"}, exitFailure, []string{"handSize 9 with queues 8", "queueLengthLimit -1"}},
		{"upstream panic", "", []string{"--upstream", "../../../verify/compare/fairqueue/testdata/upstream-panic-stale-queue-removal.json"},
			exitFailure, []string{"the queue set panicked"}},
		{"upstream with a fairslice fix", `{"config": {"queues": 0, "concurrencyLimit": 1, "fixStaleQueueRemoval": true}, "requests": []}`,
			[]string{"--upstream", "-"}, exitFailure, []string{"config: fixStaleQueueRemoval is a fairslice option"}},
		{"upstream with every fairslice fix", `{"config": {"queues": 0, "concurrencyLimit": 1, "fixZeroLimitAdmission": true, "clampFinalSeatsWithoutQueues": true}, "requests": []}`,
			[]string{"--upstream", "-"}, exitFailure, []string{"config: fixZeroLimitAdmission is a fairslice option", "config: clampFinalSeatsWithoutQueues is a fairslice option"}},
	}
	for _, tt := range tests {
		if upstreamUnavailable(tt.args) {
			continue
		}
		code, stdout, stderr := invokeSimulate(tt.stdin, tt.args...)
		if code != tt.wantCode {
			t.Errorf("%s: simulate %q = %d, want %d; stderr:\n%s", tt.name, tt.args, code, tt.wantCode, stderr)
		}
		if stdout != "" {
			t.Errorf("%s: simulate %q stdout = %q, want nothing", tt.name, tt.args, stdout)
		}
		for _, w := range tt.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: simulate %q stderr = %q, want it to contain %q", tt.name, tt.args, stderr, w)
			}
		}
	}
}

func TestSimulateHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		code, stdout, stderr := invokeSimulate("", args...)
		if code != exitOK || stdout != "" || !strings.Contains(stderr, "fairslice simulate [--upstream] [--summary] [-o text|json|yaml] SCENARIO.json") || !strings.Contains(stderr, "-upstream") {
			t.Errorf("simulate %q = %d, stdout %q, stderr %q; want 0 and usage on stderr", args, code, stdout, stderr)
		}
	}
	code, _, stderr := invoke("help", "simulate")
	if code != exitOK || !strings.Contains(stderr, "Simulate replays a scenario file") {
		t.Errorf("help simulate = %d, %q", code, stderr)
	}
}

// TestSimulateHashFromDeal: the hash "fairslice deal" prints can be pasted
// into a scenario file, and means the same flow as its decimal value.
func TestSimulateHashFromDeal(t *testing.T) {
	code, out, stderr := invoke("deal", "--deck", "8", "--hand", "2", "--hash", "3735928559")
	if code != exitOK {
		t.Fatalf("deal = %d: %s", code, stderr)
	}
	fields := strings.Fields(out)
	if len(fields) < 2 || fields[0] != "hash" {
		t.Fatalf("deal printed %q", out)
	}
	printed := fields[1] // such as 0x00000000deadbeef
	scenarioWith := func(hash string) string {
		return `{"config": {"queues": 8, "handSize": 2, "queueLengthLimit": 5, "concurrencyLimit": 1}, "requests": [
		  {"id": "a", "arrival": "0s", "hash": ` + hash + `, "duration": "1s"},
		  {"id": "b", "arrival": "0s", "hash": ` + hash + `, "duration": "1s"},
		  {"id": "c", "arrival": "0s", "hash": 7, "duration": "1s"}]}`
	}
	for _, args := range [][]string{{"-"}, {"--upstream", "-"}} {
		if upstreamUnavailable(args) {
			continue
		}
		codeHex, hex, errHex := invokeSimulate(scenarioWith(`"`+printed+`"`), args...)
		codeDec, dec, errDec := invokeSimulate(scenarioWith("3735928559"), args...)
		if codeHex != exitOK || codeDec != exitOK {
			t.Fatalf("simulate %q = %d, %d: %s%s", args, codeHex, codeDec, errHex, errDec)
		}
		if hex != dec || hex == "" {
			t.Errorf("simulate %q with hash %s:\n%s\nwith its decimal value:\n%s", args, printed, hex, dec)
		}
	}
}
