package slicercompare

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/kube/internal/slicescenario"
	"github.com/fairslice/fairslice/kube/internal/upstream/slicerun"
)

var (
	diffSeed      = flag.Uint64("diff.seed", 0, "seed for TestDifferential (0: $SLICER_DIFF_SEED or the clock)")
	diffScenarios = flag.Int("diff.scenarios", 1000, "number of random scenarios in TestDifferential")
	diffSave      = flag.String("diff.save", "", "directory for mismatching scenario files (default: the test's temp dir)")
)

// result is what is compared: the outcome and whether an error was
// reported (texts differ by design: upstream reports missing nodes only).
type result struct {
	Outcome slicerun.Outcome
	Err     bool
}

// The content of the slices (labels, annotations, ports, endpoints with
// conditions, zones, hints, owner references) is compared normalised for
// names and placement (see slicerun.Content). For a Service being deleted
// the content is left out: upstream drops the creates left after
// recycling, and which ones (their ports and endpoints) depends on its
// map order.
func runBoth(in slicerun.Input) (up, ours result, oursErr error) {
	uo, uerr := slicerun.Upstream(in)
	oo, _, oerr := slicerun.Fairslice(in)
	if in.Service.DeletionTimestamp != nil {
		uo.Content, oo.Content = slicerun.Content{}, slicerun.Content{}
	}
	return result{uo, uerr != nil}, result{oo, oerr != nil}, oerr
}

// TestDifferential runs random scenarios through upstream's Reconciler and
// through the adapter and slicer, and requires the same API calls, the
// same final slice lengths and the same slice content. A mismatch is
// written as a scenario file that "fairslice reconcile --all-pods" replays
// (with and without --upstream; the file's comment gives the commands):
// the generated Services have no selector, the Pods are given as they are.
func TestDifferential(t *testing.T) {
	seed := *diffSeed
	if seed == 0 {
		if s, err := strconv.ParseUint(os.Getenv("SLICER_DIFF_SEED"), 10, 64); err == nil {
			seed = s
		} else {
			seed = uint64(time.Now().UnixNano())
		}
	}
	t.Logf("seed %d (replay with -diff.seed=%d or SLICER_DIFF_SEED=%d)", seed, seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	dir := *diffSave
	if dir == "" {
		dir = t.TempDir()
	}
	failures := 0
	var writes, slices int
	for i := range *diffScenarios {
		in := randomScenario(rng)
		up, ours, oerr := runBoth(in)
		writes += up.Outcome.Creates + up.Outcome.Updates + up.Outcome.Deletes
		slices += len(up.Outcome.Lengths)
		if diff := cmp.Diff(up, ours); diff != "" && !upstreamCanGive(in, ours) {
			failures++
			path := filepath.Join(dir, fmt.Sprintf("slicer-mismatch-%d-%d.yaml", seed, i))
			var b bytes.Buffer
			comment := fmt.Sprintf("TestDifferential seed %d scenario %d; replay:\n  fairslice %s\n  fairslice %s", seed, i,
				strings.Join(slicescenario.ReplayArgs(&in, filepath.Base(path), false), " "),
				strings.Join(slicescenario.ReplayArgs(&in, filepath.Base(path), true), " "))
			if err := slicerun.WriteScenario(&b, in, comment); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Errorf("scenario %d: upstream and fairslice differ (-upstream +fairslice):\n%s\nfairslice error: %v\nscenario written to %s",
				i, diff, oerr, path)
			if failures >= 5 {
				t.Fatalf("stopping after %d mismatches", failures)
			}
		}
	}
	t.Logf("%d scenarios, %d writes, %d final slices; %d where upstream's counts vary from run to run (fairslice matched one of them)",
		*diffScenarios, writes, slices, varied)
}

// varied counts scenarios where upstream's outcome is not deterministic.
var varied int

// upstreamCanGive reports whether upstream, run again, produces ours. Its
// counts can vary from run to run: which of two equally full unchanged
// slices takes the remainder is random, and when only one of them carries
// hints, the other is rewritten to remove them. For a Service being
// deleted its final lengths vary too: they are the creates recycled, and
// upstream makes creates in the order of a Go map of port sets (a
// rotation of pod order up to 8 port sets, which the slicer follows;
// hash order beyond, where 300 runs may miss the slicer's order: with
// 9 or more port sets of one address type this can report a mismatch
// that is not one).
func upstreamCanGive(in slicerun.Input, ours result) bool {
	for range 300 {
		uo, uerr := slicerun.Upstream(in)
		if in.Service.DeletionTimestamp != nil {
			uo.Content = slicerun.Content{}
		}
		if cmp.Equal(result{uo, uerr != nil}, ours) {
			varied++
			return true
		}
	}
	return false
}

// TestScenarioRoundTrip checks that a written scenario reads back to the
// same outcome, so that mismatch files replay what failed.
func TestScenarioRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		in := randomScenario(rng)
		var b bytes.Buffer
		if err := slicerun.WriteScenario(&b, in, "round trip"); err != nil {
			t.Fatal(err)
		}
		back, err := slicerun.ParseScenario(b.Bytes())
		if err != nil {
			t.Fatalf("scenario %d: ParseScenario(WriteScenario(in)): %v\n%s", i, err, b.String())
		}
		back.MaxEndpointsPerSlice, back.TriggerTime = in.MaxEndpointsPerSlice, in.TriggerTime
		want, _ := slicerun.Upstream(in)
		got, _ := slicerun.Upstream(back)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("scenario %d: outcome changed by the round trip (-want +got):\n%s", i, diff)
		}
	}
}
