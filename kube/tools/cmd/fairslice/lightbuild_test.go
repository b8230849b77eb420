//go:build !upstream

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLightBuildDependencies guards the light install: the default build
// links no upstream implementation (k8s.io/apiserver, k8s.io/kubernetes,
// k8s.io/endpointslice) and neither client-go's typed clientset nor its
// informers (the EndpointSlice controller's imports: the CLI takes the
// conversion from kube/endpointslice/adapter instead).
func TestLightBuildDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, d := range deps {
		for _, banned := range []string{"k8s.io/apiserver/", "k8s.io/kubernetes/", "k8s.io/endpointslice",
			"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "github.com/fairslice/fairslice/kube/endpointslice"} {
			if d == strings.TrimSuffix(banned, "/") || strings.HasPrefix(d, banned) && d != "github.com/fairslice/fairslice/kube/endpointslice/adapter" {
				t.Errorf("the default build of the CLI links %s", d)
			}
		}
	}
	if n := len(deps); n > 500 {
		t.Errorf("the default build of the CLI links %d packages, want at most 500 (422 when this test was written)", n)
	}
}
