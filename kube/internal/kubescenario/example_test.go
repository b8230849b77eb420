package kubescenario_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/fairslice/fairslice/kube/internal/kubescenario"
	"github.com/fairslice/fairslice/topology"
)

// Reconcile the scenario of "fairslice hints": 12 pods over three equal
// zones (6, 4, 2), Auto hints.
func ExampleRunHints() {
	data, err := os.ReadFile("../../tools/cmd/fairslice/testdata/hints-twelve.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	sc, err := kubescenario.ParseHints(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	run, err := kubescenario.RunHints(sc, topology.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(run.Outcome)
	fmt.Println(string(out))
	// Output:
	// {"enabled":true,"reason":"","hintsByZone":{"zone-a":4,"zone-b":4,"zone-c":4},"crossZone":2}
}
