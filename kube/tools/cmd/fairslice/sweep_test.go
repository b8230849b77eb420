package main

import (
	"strings"
	"testing"
)

func TestSweep(t *testing.T) {
	code, stdout, stderr := invoke("sweep", "--pods", "2000", "--nodes=100", "--pattern", "random-churn", "--duration", "10m")
	for _, want := range []string{"Random churn of 2000 pods at 1/s for 10m0s (600 replacements in 600 syncs", "fewest bytes sent", "default"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("sweep = %d, stdout:\n%s\nstderr: %s\nwant it to contain %q", code, stdout, stderr, want)
		}
	}
	// Single pods changing: slices of 1 send the fewest bytes.
	marked := false
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "1" {
			marked = strings.HasSuffix(line, "fewest bytes sent")
		}
	}
	if !marked {
		t.Errorf("sweep random churn: the row of size 1 is not marked fewest bytes sent:\n%s", stdout)
	}
	code, stdout, _ = invoke("sweep", "--pods", "300", "--nodes", "10", "--all")
	if code != exitOK || strings.Count(stdout, "\n") != 3+1000 {
		t.Errorf("sweep --all = %d with %d lines, want 0 and 1003", code, strings.Count(stdout, "\n"))
	}
	for _, args := range [][]string{{"--pods", "0"}, {"--pattern", "spiky"}, {"--surge", "-1"}, {"extra"}} {
		if code, _, _ := invoke(append([]string{"sweep"}, args...)...); code != exitUsage {
			t.Errorf("sweep %q = %d, want %d", args, code, exitUsage)
		}
	}
}
