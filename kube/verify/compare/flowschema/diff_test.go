package flowschemacompare

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/kube/internal/upstream/upstreamfs"
)

var (
	fsSeed     = flag.Uint64("fs.seed", 0, "seed for the flowschema differential tests (0: derive from the clock)")
	fsConfigs  = flag.Int("fs.configs", 60, "random configurations in TestClassificationDifferential")
	fsRequests = flag.Int("fs.requests", 50, "requests per configuration")
	fsSave     = flag.String("fs.save", "", "directory to write mismatching configurations and requests into")
)

func seed(t *testing.T) uint64 {
	s := *fsSeed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -fs.seed=%d)", s, s)
	return s
}

func ours(d flowschema.Decision) upstreamfs.Result {
	return upstreamfs.Result{FlowSchema: d.FlowSchema, PriorityLevel: d.PriorityLevel, Distinguisher: d.Distinguisher}
}

func TestClassificationDifferential(t *testing.T) {
	s := seed(t)
	g := gen{rand.New(rand.NewPCG(s, 0xf10e))}
	total := 0
	for n := 0; n <= *fsConfigs; n++ {
		cfg := flowschema.DefaultConfig()
		if n > 0 {
			cfg = g.config(40)
		}
		c, err := flowschema.Compile(cfg)
		if err != nil {
			t.Fatalf("config %d: Compile: %v", n, err)
		}
		up, err := upstreamfs.Start(cfg, 600)
		if err != nil {
			t.Fatalf("config %d: %v", n, err)
		}
		var reqs []flowschema.Request
		bad := 0
		for range *fsRequests {
			req := g.request()
			reqs = append(reqs, req)
			want := up.Classify(&req)
			got := ours(c.Classify(&req))
			total++
			if diff := cmp.Diff(want, got); diff != "" {
				bad++
				if bad <= 3 {
					t.Errorf("config %d, request %s: mismatch (-upstream +fairslice):\n%s", n, flowschema.DescribeRequest(&req), diff)
				}
			}
		}
		up.Close()
		if bad > 0 {
			save(t, s, n, cfg, reqs)
		}
	}
	t.Logf("%d requests over %d random configurations and the default one agree", total, *fsConfigs)
	if total < 2000 {
		t.Errorf("only %d requests compared; the bar is 2,000", total)
	}
}

// save writes a mismatching configuration and its requests where "fairslice
// classify" can replay them.
func save(t *testing.T, s uint64, n int, cfg *flowschema.Config, reqs []flowschema.Request) {
	dir := *fsSave
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, fmt.Sprintf("mismatch-%d-%d", s, n))
	var y bytes.Buffer
	if err := cfg.Encode(&y); err != nil {
		t.Fatal(err)
	}
	var j bytes.Buffer
	enc := json.NewEncoder(&j)
	for i := range reqs {
		if err := enc.Encode(&reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(base+".yaml", y.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".jsonl", j.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("replay: fairslice classify --config %s.yaml [--upstream] %s.jsonl", base, base)
}
