package slicerun

import (
	"os"
	"testing"
)

// FuzzParseScenario: any input either fails to parse with an error or
// yields a scenario that fairslice reconciles without panicking.
func FuzzParseScenario(f *testing.F) {
	if data, err := os.ReadFile("../../../tools/cmd/fairslice/testdata/reconcile-basic.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("kind: Service\nmetadata: {name: s, uid: u}\nspec: {clusterIP: None}\n---\nkind: Pod\nmetadata: {name: p}\nstatus: {podIP: 10.0.0.1}\n"))
	f.Add([]byte("kind: Service\n---\nkind: EndpointSlice\naddressType: IP\nports: [{}]\nendpoints: [{addresses: []}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := ParseScenario(data)
		if err != nil {
			return
		}
		for _, m := range []int{1, 3, 100} {
			in.MaxEndpointsPerSlice = m
			_, _, _ = Fairslice(in) // errors are fine; panics are not
		}
	})
}
