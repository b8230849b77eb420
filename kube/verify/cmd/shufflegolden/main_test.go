package main

import (
	"bytes"
	"os"
	"testing"
)

// goldenPath is the checked-in file, relative to this package's directory.
const goldenPath = "../../../../shufflesharding/testdata/upstream_hands.json"

// TestGoldenFileUpToDate fails when the checked-in golden file differs from
// what the generator produces now, for example after an upstream version
// bump; regenerate with "cd kube/verify && go run ./cmd/shufflegolden".
func TestGoldenFileUpToDate(t *testing.T) {
	g, err := build()
	if err != nil {
		t.Fatal(err)
	}
	want, err := encode(g)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale (%d bytes, generator gives %d); run: cd kube/verify && go run ./cmd/shufflegolden", goldenPath, len(got), len(want))
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	a, err := build()
	if err != nil {
		t.Fatal(err)
	}
	b, err := build()
	if err != nil {
		t.Fatal(err)
	}
	ea, _ := encode(a)
	eb, _ := encode(b)
	if !bytes.Equal(ea, eb) {
		t.Error("two runs of build() encode differently")
	}
}

func TestHashFlowReferenceVectors(t *testing.T) {
	for _, f := range referenceFlows {
		if got := hashFlow(f.fs, f.dist); got != f.hash {
			t.Errorf("hashFlow(%q, %q) = %#x, want %#x", f.fs, f.dist, got, f.hash)
		}
	}
}
