package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// simulate --backend-slots with auto follows a halving of the capacity,
// and its JSON carries the trace and the sweep.
func TestSimulateBackend(t *testing.T) {
	code, stdout, stderr := invokeSimulate("", "--backend-slots", "8", "--backend-slots-at", "3s=4", "--server-concurrency", "auto",
		"--duration", "6s", "--sweep", "4,600", "-o", "json")
	if code != exitOK {
		t.Fatalf("simulate --backend-slots = %d, stderr:\n%s", code, stderr)
	}
	var res backendResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("simulate --backend-slots -o json: %v\n%s", err, stdout)
	}
	if res.ServerConcurrency != "auto" || res.Slots != 8 || len(res.Changes) != 1 || res.Changes[0].At != "3s" || res.Changes[0].Slots != 4 {
		t.Errorf("simulate --backend-slots header = %+v, want auto, 8 slots, 4 at 3s", res)
	}
	if len(res.Trace) != 60 {
		t.Fatalf("trace has %d points, want 60 (6 s every 100 ms)", len(res.Trace))
	}
	before, after := res.Trace[29], res.Trace[59]
	if before.Slots != 8 || after.Slots != 4 || after.Total >= before.Total || after.Total < 4 || after.Total > 7 {
		t.Errorf("total at %s = %d (slots %d), at %s = %d (slots %d): want it to fall to between 4 and 7 (N to 1.5N+1 of the 4 slots) after the halving",
			before.At, before.Total, before.Slots, after.At, after.Total, after.Slots)
	}
	if len(res.Sweep) != 2 || res.Sweep[0].Total != 4 || res.Sweep[1].Goodput >= res.Goodput {
		t.Errorf("sweep = %+v, want static 4 and 600, 600 below the adaptive goodput %.1f", res.Sweep, res.Goodput)
	}
}

func TestSimulateBackendErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend-slots", "4", "--backend-slots-at", "15s"}, `"15s" is not T=N`},
		{[]string{"--backend-slots", "4", "--server-concurrency", "lots"}, `"lots" is neither a number of seats nor auto`},
		{[]string{"--backend-slots", "4", "--sweep", "4,x"}, `"x" is not a positive number`},
		{[]string{"--backend-slots", "4", "x.json"}, "--backend-slots takes no scenario file"},
		{[]string{"--audit-log", "a.log", "--server-concurrency", "auto"}, "--server-concurrency must be a positive number with --audit-log"},
		{[]string{"--backend-slots", "-1"}, "Config.Slots=-1 must be positive"},
	} {
		code, _, stderr := invokeSimulate("", tc.args...)
		if code == exitOK || !strings.Contains(stderr, tc.want) {
			t.Errorf("simulate %v = %d, stderr %q; want failure mentioning %q", tc.args, code, stderr, tc.want)
		}
	}
}
