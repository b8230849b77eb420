package topologycompare

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fairslice/fairslice/kube/internal/kubescenario"
	"github.com/fairslice/fairslice/kube/internal/upstream/upstreamtopo"
	"github.com/fairslice/fairslice/topology"
)

// FuzzScenario feeds arbitrary bytes to ParseScenario and runs every
// scenario it accepts through fairslice with both allocators: no input may
// panic, and whatever parses must reconcile without error. On small
// scenarios that upstream also accepts, the default allocator must print
// what upstream prints.
func FuzzScenario(f *testing.F) {
	files, _ := filepath.Glob("../../../tools/cmd/fairslice/testdata/hints-*.yaml")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("kind: Service\nmetadata: {name: s}\n---\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: 1x}}\n"))
	f.Add([]byte("kind: Pod\nmetadata:\n  name: p\n---\n: :\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := kubescenario.ParseHints(data)
		if err != nil {
			return
		}
		run, err := kubescenario.RunHints(sc, topology.Options{})
		if err != nil {
			return // reported as an error to the user (for example a bad pod IP)
		}
		if _, err := kubescenario.RunHints(sc, topology.Options{Allocator: topology.AllocatorMinCrossZone}); err != nil {
			t.Fatalf("min-cross fails where upstream's allocator does not: %v", err)
		}
		if len(sc.Pods)+len(sc.Nodes) > 50 {
			return
		}
		up, err := upstreamtopo.Reconcile(sc)
		if err != nil || up.Err != nil || run.Problems != nil {
			return
		}
		if run.Outcome.Enabled != up.Outcome.Enabled || run.Outcome.Reason != up.Outcome.Reason {
			t.Fatalf("fairslice %+v, upstream %+v", run.Outcome, up.Outcome)
		}
	})
}
