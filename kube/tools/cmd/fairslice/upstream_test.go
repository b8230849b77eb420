package main

import (
	"slices"
	"strings"
	"testing"
)

// upstreamUnavailable reports whether args ask for --upstream of a binary
// built without it; tests that compare with upstream skip such runs, and
// TestUpstreamRefusedInLightBuild checks the refusal instead. CI runs the
// kube module's tests with -tags upstream.
func upstreamUnavailable(args []string) bool {
	return !upstreamBuilt && slices.Contains(args, "--upstream")
}

// TestUpstreamRefusedInLightBuild: without -tags upstream, every command
// that has --upstream refuses it as a usage error that says how to get it,
// before reading any input.
func TestUpstreamRefusedInLightBuild(t *testing.T) {
	if upstreamBuilt {
		t.Skip("built with -tags upstream: the other tests run the --upstream modes")
	}
	for _, args := range [][]string{
		{"classify", "--upstream", "testdata/apf-requests.jsonl"},
		{"simulate", "--upstream", "testdata/simulate-example.json"},
		{"reconcile", "--upstream", "testdata/reconcile-basic.yaml"},
		{"hints", "--upstream", "testdata/hints-eleven.yaml"},
		{"route", "--upstream", "--node", "node-a", "testdata/hints-eleven.yaml"},
		{"simulate", "--compare", "--svg", "x.svg", "testdata/simulate-example.json"},
	} {
		code, stdout, stderr := invoke(args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "-tags upstream") {
			t.Errorf("fairslice %q = %d, %q, stderr %q; want %d and a hint to build with -tags upstream", args, code, stdout, stderr, exitUsage)
		}
	}
}
