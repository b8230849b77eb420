package apf

import (
	"bufio"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var updateDecisions = flag.Bool("apf.update-decisions", false, "rewrite testdata/decisions.golden from the code as it is")

// decisionSeeds are the random cases of testdata/decisions.golden.
const decisionSeeds = 24

// TestDecisionsMatchGolden replays random configurations and request
// sequences with the default options (static total, periodic borrowing on
// the fake clock) and compares each trace's digest with the golden file,
// written by the code before the adaptive total existed:
//
//	go test ./apf -run TestDecisionsMatchGolden -apf.update-decisions
func TestDecisionsMatchGolden(t *testing.T) {
	var got []string
	for seed := range uint64(decisionSeeds) {
		tc := randomTraceCase(rand.New(rand.NewPCG(seed, 26)))
		tr := runTrace(t, tc, Options{})
		got = append(got, fmt.Sprintf("seed %d lines %d sha256 %x", seed, strings.Count(tr, "\n"), sha256.Sum256([]byte(tr))))
	}
	const path = "testdata/decisions.golden"
	if *updateDecisions {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		want = append(want, sc.Text())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decision traces differ from %s (-golden +now):\n%s", path, diff)
	}
}
