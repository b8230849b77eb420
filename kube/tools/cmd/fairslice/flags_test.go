package main

import (
	"flag"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseInterspersed: flags before, between and after positional
// arguments; "-" is positional; after "--" everything is; help and a bad
// flag stop the command.
func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantPos  []string
		wantName string
		wantBool bool
		wantStop bool
		wantCode int
	}{
		{args: []string{"a.yaml", "--name", "x", "b.yaml", "--on"}, wantPos: []string{"a.yaml", "b.yaml"}, wantName: "x", wantBool: true},
		{args: []string{"--name=x", "-", "--on"}, wantPos: []string{"-"}, wantName: "x", wantBool: true},
		{args: []string{"a", "--", "--on", "-x"}, wantPos: []string{"a", "--on", "-x"}},
		{args: []string{"--name", "--", "a"}, wantPos: []string{"a"}, wantName: "--"},
		{args: nil},
		{args: []string{"a", "-h"}, wantStop: true, wantCode: exitOK},
		{args: []string{"a", "--nope"}, wantStop: true, wantCode: exitUsage},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		name := fs.String("name", "", "")
		on := fs.Bool("on", false, "")
		pos, stop, code := parseInterspersed(fs, tc.args)
		if stop != tc.wantStop || code != tc.wantCode {
			t.Errorf("parseInterspersed(%q) stop, code = %v, %d, want %v, %d", tc.args, stop, code, tc.wantStop, tc.wantCode)
			continue
		}
		if stop {
			continue
		}
		if diff := cmp.Diff(tc.wantPos, pos); diff != "" || *name != tc.wantName || *on != tc.wantBool {
			t.Errorf("parseInterspersed(%q) = %q (-want +got %s), name %q, on %v; want name %q, on %v", tc.args, pos, diff, *name, *on, tc.wantName, tc.wantBool)
		}
	}
}
