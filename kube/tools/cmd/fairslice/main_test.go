package main

import (
	"bytes"
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fairslice/fairslice/shufflesharding"
)

// invoke runs the CLI in process and returns its exit status and output.
func invoke(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunDispatch(t *testing.T) {
	tests := []struct {
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{nil, exitUsage, []string{"Usage:", "deal", "odds", "simulate", "help"}},
		{[]string{"--help"}, exitOK, []string{"Usage:", "deal", "odds", "simulate"}},
		{[]string{"-h"}, exitOK, []string{"Commands:"}},
		{[]string{"help"}, exitOK, []string{"Commands:"}},
		{[]string{"help", "deal"}, exitOK, []string{"fairslice deal [--deck N]"}},
		{[]string{"help", "odds"}, exitOK, []string{"fairslice odds [--config"}},
		{[]string{"help", "nope"}, exitUsage, []string{`unknown command "nope"`, "Commands:"}},
		{[]string{"help", "--help"}, exitOK, []string{"Commands:"}},
		{[]string{"nope"}, exitUsage, []string{`fairslice: unknown command "nope"`, "Commands:"}},
		{[]string{"--deck", "5"}, exitUsage, []string{`unknown command "--deck"`}},
	}
	for _, tt := range tests {
		code, stdout, stderr := invoke(tt.args...)
		if code != tt.wantCode {
			t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tt.args, code, tt.wantCode, stderr)
		}
		if stdout != "" {
			t.Errorf("run(%q) wrote %q to stdout, want nothing", tt.args, stdout)
		}
		for _, want := range tt.wantStderr {
			if !strings.Contains(stderr, want) {
				t.Errorf("run(%q) stderr = %q, want it to contain %q", tt.args, stderr, want)
			}
		}
	}
}

func TestCommandsTable(t *testing.T) {
	want := []string{"deal", "odds", "simulate", "classify", "explain", "validate", "lint", "limits", "reconcile", "propagation", "sweep", "hints", "route", "diff", "fleet"}
	if len(commands) != len(want) {
		t.Fatalf("commands has %d entries, want %d", len(commands), len(want))
	}
	for i, c := range commands {
		if c.name != want[i] || c.summary == "" || c.run == nil {
			t.Errorf("commands[%d] = {%q, %q, run nil: %v}, want %q with a summary and run", i, c.name, c.summary, c.run == nil, want[i])
		}
	}
}

func TestDeal(t *testing.T) {
	// Expected hands are upstream's (k8s.io/apiserver v0.37.2), from the
	// reference vectors; the golden and differential tests cover the rest.
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--deck", "128", "--hand", "8", "--hash", "0xdeadbeef"},
			"hash 0x00000000deadbeef deck 128 hand 8: [111 55 122 74 14 0 1 2]\n"},
		{[]string{"--deck=128", "--hand=6", "--hash=12345678901234567890"},
			"hash 0xab54a98ceb1f0ad2 deck 128 hand 6: [82 108 124 106 90 52]\n"},
		{[]string{"--deck", "1024", "--hand", "6", "--hash", "18446744073709551615"},
			"hash 0xffffffffffffffff deck 1024 hand 6: [1023 15 497 420 22 243]\n"},
		{[]string{"-deck", "64", "-hand", "6", "-hash", "0XDEADBEEFCAFEBABE"},
			"hash 0xdeadbeefcafebabe deck 64 hand 6: [62 52 53 30 23 46]\n"},
		{[]string{"--deck", "16", "--hand", "4", "--hash", "42"},
			"hash 0x000000000000002a deck 16 hand 4: [10 2 0 1]\n"},
		// A leading zero is decimal, not octal.
		{[]string{"--deck", "16", "--hand", "4", "--hash", "042"},
			"hash 0x000000000000002a deck 16 hand 4: [10 2 0 1]\n"},
		// Defaults: the Kubernetes API's 64 queues, hand size 8.
		{[]string{"--hash", "0xdeadbeef"},
			"hash 0x00000000deadbeef deck 64 hand 8: [47 36 42 63 4 5 0 1]\n"},
		{[]string{"--deck", "128", "--hand", "6", "--flow-schema", "global-default", "--distinguisher", "alice"},
			`flow-schema "global-default" distinguisher "alice" hash 0xf4de3bd42ccdf6b7 deck 128 hand 6: [55 62 126 125 105 1]` + "\n"},
		{[]string{"--deck", "64", "--hand", "6", "--flow-schema", "global-default"},
			`flow-schema "global-default" distinguisher "" hash 0x4ba17d43ad24f583 deck 64 hand 6: [3 51 29 58 1 33]` + "\n"},
		{[]string{"--deck", "64", "--hand", "6", "--flow-schema", "global-default", "--distinguisher="},
			`flow-schema "global-default" distinguisher "" hash 0x4ba17d43ad24f583 deck 64 hand 6: [3 51 29 58 1 33]` + "\n"},
		{[]string{"--deck", "1", "--hand", "1", "--hash", "7"},
			"hash 0x0000000000000007 deck 1 hand 1: [0]\n"},
	}
	for _, tt := range tests {
		args := append([]string{"deal"}, tt.args...)
		code, stdout, stderr := invoke(args...)
		if code != exitOK || stdout != tt.want || stderr != "" {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want 0, %q, no stderr", args, code, stdout, stderr, tt.want)
		}
	}
}

func TestDealJSON(t *testing.T) {
	tests := []struct {
		args []string
		want dealResult
	}{
		{[]string{"--deck", "128", "--hand", "8", "--hash", "0xdeadbeef", "--json"},
			dealResult{Deck: 128, Hand: 8, Hash: "0x00000000deadbeef", Cards: []int{111, 55, 122, 74, 14, 0, 1, 2}}},
		{[]string{"--json", "--deck", "128", "--hand", "6", "--flow-schema", "global-default", "--distinguisher", "alice"},
			dealResult{Deck: 128, Hand: 6, FlowSchema: ptr("global-default"), Distinguisher: ptr("alice"),
				Hash: "0xf4de3bd42ccdf6b7", Cards: []int{55, 62, 126, 125, 105, 1}}},
	}
	for _, tt := range tests {
		args := append([]string{"deal"}, tt.args...)
		code, stdout, stderr := invoke(args...)
		if code != exitOK || stderr != "" {
			t.Errorf("run(%q) = %d, stderr %q; want 0, no stderr", args, code, stderr)
			continue
		}
		var got dealResult
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Errorf("run(%q) printed %q, not JSON: %v", args, stdout, err)
			continue
		}
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(tt.want)
		if !bytes.Equal(gotJSON, wantJSON) {
			t.Errorf("run(%q) = %s, want %s", args, gotJSON, wantJSON)
		}
	}
	// Hand-only output must omit the flow fields.
	_, stdout, _ := invoke("deal", "--hash", "1", "--json")
	if strings.Contains(stdout, "flowSchema") || strings.Contains(stdout, "distinguisher") {
		t.Errorf("deal --hash 1 --json = %q, want no flow fields", stdout)
	}
}

func ptr[T any](v T) *T { return &v }

func TestDealErrors(t *testing.T) {
	tests := []struct {
		args       []string
		wantCode   int
		wantStderr string
	}{
		{nil, exitUsage, "one of --hash or --flow-schema is required"},
		{[]string{"--deck", "128"}, exitUsage, "one of --hash or --flow-schema is required"},
		{[]string{"--hash", "1", "--flow-schema", "x"}, exitUsage, "--hash and --flow-schema are mutually exclusive"},
		{[]string{"--hash", "1", "--distinguisher", "alice"}, exitUsage, "--distinguisher needs --flow-schema"},
		{[]string{"--hash", "1", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"--hash", "abc"}, exitUsage, `"abc" is not a decimal or 0x-hexadecimal number`},
		{[]string{"--hash", "-1"}, exitUsage, `"-1" is not a decimal or 0x-hexadecimal number`},
		{[]string{"--hash", "0x"}, exitUsage, `"0x" is not a decimal or 0x-hexadecimal number`},
		{[]string{"--hash", "0xg"}, exitUsage, `"0xg" is not a decimal or 0x-hexadecimal number`},
		{[]string{"--hash", "0b101"}, exitUsage, `"0b101" is not a decimal or 0x-hexadecimal number`},
		{[]string{"--hash", "18446744073709551616"}, exitUsage, `"18446744073709551616" does not fit in 64 bits`},
		{[]string{"--hash", "0x10000000000000000"}, exitUsage, `"0x10000000000000000" does not fit in 64 bits`},
		{[]string{"--hash"}, exitUsage, "flag needs an argument"},
		{[]string{"--deck", "many", "--hash", "1"}, exitUsage, `invalid value "many" for flag -deck`},
		{[]string{"--hand", "1.5", "--hash", "1"}, exitUsage, `invalid value "1.5" for flag -hand`},
		{[]string{"--queues", "5"}, exitUsage, "flag provided but not defined: -queues"},
		{[]string{"--deck", "128", "--hand", "9", "--hash", "1"}, exitFailure,
			"fairslice deal: cannot deal a hand of 9 from a deck of 128: required entropy bits of deckSize 128 and handSize 9 is greater than 60"},
		{[]string{"--deck", "0", "--hash", "1"}, exitFailure, "deckSize 0 or handSize 8 is not positive"},
		{[]string{"--deck", "4", "--hash", "1"}, exitFailure, "handSize 8 is greater than deckSize 4"},
		{[]string{"--deck", "67108865", "--hand", "1", "--flow-schema", "x"}, exitFailure, "deckSize 67108865 is impractically large"},
	}
	for _, tt := range tests {
		args := append([]string{"deal"}, tt.args...)
		code, stdout, stderr := invoke(args...)
		if code != tt.wantCode || stdout != "" || !strings.Contains(stderr, tt.wantStderr) {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want %d, no stdout, stderr containing %q",
				args, code, stdout, stderr, tt.wantCode, tt.wantStderr)
		}
	}
}

func TestDealHelp(t *testing.T) {
	for _, flag := range []string{"--help", "-h", "-help"} {
		code, stdout, stderr := invoke("deal", flag)
		if code != exitOK || stdout != "" {
			t.Errorf("run(deal %s) = %d, stdout %q; want 0, no stdout", flag, code, stdout)
		}
		for _, want := range []string{"Usage:", "--flow-schema NAME", "-hash HASH", "-distinguisher D", "(default 64)", "(default 8)"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("run(deal %s) stderr = %q, want it to contain %q", flag, stderr, want)
			}
		}
	}
}

// parseTable splits the text table printed by odds into rows of fields,
// dropping the header, and returns any footnote lines separately.
func parseTable(t *testing.T, out string) (header []string, rows [][]string, notes []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	header = strings.Fields(lines[0])
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "*") {
			notes = append(notes, l)
			continue
		}
		rows = append(rows, strings.Fields(l))
	}
	return header, rows, notes
}

// oneOverBinomial returns 1/C(n, k) rounded to float64, computed exactly;
// it is the squish probability with one elephant.
func oneOverBinomial(n, k int) float64 {
	f, _ := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Binomial(int64(n), int64(k))).Float64()
	return f
}

func TestOddsDefaultTable(t *testing.T) {
	code, stdout, stderr := invoke("odds")
	if code != exitOK || stderr != "" {
		t.Fatalf("run(odds) = %d, stderr %q; want 0, no stderr", code, stderr)
	}
	header, rows, notes := parseTable(t, stdout)
	wantHeader := []string{"queues", "hand", "bits", "1", "elephant", "4", "elephants", "16", "elephants"}
	if strings.Join(header, " ") != strings.Join(wantHeader, " ") {
		t.Errorf("odds header = %q, want %q", header, wantHeader)
	}
	if len(notes) != 0 {
		t.Errorf("odds notes = %q, want none (every docs configuration is valid)", notes)
	}
	// The docs table's (HandSize, Queues) rows, in order.
	wantRows := [][2]int{{12, 32}, {10, 32}, {10, 64}, {9, 64}, {8, 64}, {8, 128}, {7, 128}, {7, 256}, {6, 256}, {6, 512}, {6, 1024}}
	if len(rows) != len(wantRows) {
		t.Fatalf("odds printed %d rows, want %d:\n%s", len(rows), len(wantRows), stdout)
	}
	for i, r := range rows {
		hand, queues := wantRows[i][0], wantRows[i][1]
		want := []string{
			strconv.Itoa(queues), strconv.Itoa(hand),
			strconv.Itoa(shufflesharding.RequiredEntropyBits(queues, hand)),
			strconv.FormatFloat(oneOverBinomial(queues, hand), 'g', 4, 64),
			strconv.FormatFloat(shufflesharding.SquishProbability(queues, hand, 4), 'g', 4, 64),
			strconv.FormatFloat(shufflesharding.SquishProbability(queues, hand, 16), 'g', 4, 64),
		}
		if strings.Join(r, " ") != strings.Join(want, " ") {
			t.Errorf("odds row %d = %q, want %q", i, r, want)
		}
	}
	// Spot checks against the published table, rounded to 4 digits.
	fields := strings.Fields(stdout)
	for _, want := range []string{"4.429e-09", "0.1143", "0.9935", "6.337e-16", "4.517e-07"} {
		if !slices.Contains(fields, want) {
			t.Errorf("odds output lacks the published value %s:\n%s", want, stdout)
		}
	}
}

func TestOddsFlags(t *testing.T) {
	cell := func(q, h, e, digits int) string {
		if digits == 0 {
			digits = -1
		}
		return strconv.FormatFloat(shufflesharding.SquishProbability(q, h, e), 'g', digits, 64)
	}
	tests := []struct {
		args       []string
		wantHeader string
		wantRows   []string
		wantNotes  int
	}{
		{[]string{"--config", "64x8,128x6", "--elephants", "1,2"},
			"queues hand bits 1 elephant 2 elephants",
			[]string{"64 8 48 " + cell(64, 8, 1, 4) + " " + cell(64, 8, 2, 4), "128 6 42 " + cell(128, 6, 1, 4) + " " + cell(128, 6, 2, 4)}, 0},
		{[]string{"--config", "64x8", "--config", "128X6", "--elephants", "3", "--digits", "0"},
			"queues hand bits 3 elephants",
			[]string{"64 8 48 " + cell(64, 8, 3, 0), "128 6 42 " + cell(128, 6, 3, 0)}, 0},
		{[]string{"--queues", "64,128", "--hand", "6,8", "--elephants", "0,16", "--digits", "2"},
			"queues hand bits 0 elephants 16 elephants",
			[]string{"64 6 36 0 " + cell(64, 6, 16, 2), "64 8 48 0 " + cell(64, 8, 16, 2),
				"128 6 42 0 " + cell(128, 6, 16, 2), "128 8 56 0 " + cell(128, 8, 16, 2)}, 0},
		{[]string{"--config", "128x9,16x16", "--elephants", "1"},
			"queues hand bits 1 elephant",
			[]string{"128 9 63* " + cell(128, 9, 1, 4), "16 16 64* 1"}, 1},
		{[]string{"--config", "1x1", "--elephants", "1"},
			"queues hand bits 1 elephant",
			[]string{"1 1 0 1"}, 0},
	}
	for _, tt := range tests {
		args := append([]string{"odds"}, tt.args...)
		code, stdout, stderr := invoke(args...)
		if code != exitOK || stderr != "" {
			t.Errorf("run(%q) = %d, stderr %q; want 0, no stderr", args, code, stderr)
			continue
		}
		header, rows, notes := parseTable(t, stdout)
		if got := strings.Join(header, " "); got != tt.wantHeader {
			t.Errorf("run(%q) header = %q, want %q", args, got, tt.wantHeader)
		}
		var got []string
		for _, r := range rows {
			got = append(got, strings.Join(r, " "))
		}
		if strings.Join(got, "\n") != strings.Join(tt.wantRows, "\n") {
			t.Errorf("run(%q) rows =\n%s\nwant\n%s", args, strings.Join(got, "\n"), strings.Join(tt.wantRows, "\n"))
		}
		if len(notes) != tt.wantNotes {
			t.Errorf("run(%q) notes = %q, want %d", args, notes, tt.wantNotes)
		}
	}
}

func TestOddsJSON(t *testing.T) {
	code, stdout, stderr := invoke("odds", "--json", "--config", "64x8,128x9", "--elephants", "1,4")
	if code != exitOK || stderr != "" {
		t.Fatalf("odds --json = %d, stderr %q", code, stderr)
	}
	var got []oddsRow
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("odds --json printed %q, not JSON: %v", stdout, err)
	}
	want := []oddsRow{
		{oddsConfig{64, 8}, 48, true, []int{1, 4}, []float64{oneOverBinomial(64, 8), shufflesharding.SquishProbability(64, 8, 4)}},
		{oddsConfig{128, 9}, 63, false, []int{1, 4}, []float64{oneOverBinomial(128, 9), shufflesharding.SquishProbability(128, 9, 4)}},
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("odds --json = %s, want %s", gotJSON, wantJSON)
	}
}

func TestOddsErrors(t *testing.T) {
	tests := []struct {
		args       []string
		wantStderr []string
	}{
		{[]string{"--config", "8x64"}, []string{"configuration 8x64: hand 64 is greater than queues 8 (did you mean 64x8?)"}},
		{[]string{"--config", "64"}, []string{`--config: "64" is not QUEUESxHAND`}},
		{[]string{"--config", "64x"}, []string{`--config: "64x" is not QUEUESxHAND`}},
		{[]string{"--config", "64x8,"}, []string{`empty item in "64x8,"`}},
		{[]string{"--config", "0x0"}, []string{"configuration 0x0: queues 0 out of range"}},
		{[]string{"--config", "67108865x1"}, []string{"configuration 67108865x1: queues 67108865 out of range"}},
		{[]string{"--config", "64x0"}, []string{"configuration 64x0: hand 0 is not positive"}},
		{[]string{"--config", "5000x2000"}, []string{"configuration 5000x2000: hand 2000 is too large"}},
		{[]string{"--queues", "64"}, []string{"--queues and --hand must be given together"}},
		{[]string{"--hand", "8"}, []string{"--queues and --hand must be given together"}},
		{[]string{"--queues", "six", "--hand", "8"}, []string{`--queues: "six" is not an integer`}},
		{[]string{"--elephants", "-1"}, []string{"--elephants: -1 is negative"}},
		{[]string{"--elephants", "many"}, []string{`--elephants: "many" is not an integer`}},
		{[]string{"--digits", "40"}, []string{"--digits: 40 out of range"}},
		{[]string{"extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"--nope"}, []string{"flag provided but not defined: -nope"}},
		// Every problem is reported, not just the first.
		{[]string{"--config", "8x64,abc", "--elephants", "-2"}, []string{"8x64", `"abc"`, "-2 is negative"}},
	}
	for _, tt := range tests {
		args := append([]string{"odds"}, tt.args...)
		code, stdout, stderr := invoke(args...)
		if code != exitUsage || stdout != "" {
			t.Errorf("run(%q) = %d, stdout %q; want %d, no stdout", args, code, stdout, exitUsage)
		}
		for _, want := range tt.wantStderr {
			if !strings.Contains(stderr, want) {
				t.Errorf("run(%q) stderr = %q, want it to contain %q", args, stderr, want)
			}
		}
	}
}

func TestOddsHelp(t *testing.T) {
	code, stdout, stderr := invoke("odds", "--help")
	if code != exitOK || stdout != "" {
		t.Errorf("run(odds --help) = %d, stdout %q; want 0, no stdout", code, stdout)
	}
	for _, want := range []string{"Usage:", "-config QUEUESxHAND", "-elephants", "-digits"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("run(odds --help) stderr = %q, want it to contain %q", stderr, want)
		}
	}
}

func FuzzParseHash(f *testing.F) {
	for _, s := range []string{"0", "42", "042", "0x2a", "0X2A", "18446744073709551615", "0xffffffffffffffff", "", "0x", "-1", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseHash(s)
		if err != nil {
			return
		}
		if d, err := strconv.ParseUint(s, 10, 64); err == nil && d != v {
			t.Errorf("parseHash(%q) = %d, want decimal %d", s, v, d)
		}
		// Whatever parses must print back to an equivalent form.
		if back, err := parseHash(strconv.FormatUint(v, 10)); err != nil || back != v {
			t.Errorf("parseHash(%q) = %d, but decimal round trip gives %d, %v", s, v, back, err)
		}
		if back, err := parseHash("0x" + strconv.FormatUint(v, 16)); err != nil || back != v {
			t.Errorf("parseHash(%q) = %d, but hex round trip gives %d, %v", s, v, back, err)
		}
	})
}
