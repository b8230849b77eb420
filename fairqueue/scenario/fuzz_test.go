package scenario

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse parses arbitrary scenario files; those that parse must survive
// a Write/Parse round trip and, when small enough, replay through fairqueue
// with every request ending in exactly one valid state.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"config": {"queues": 0, "concurrencyLimit": 0}, "requests": [{"id": "x", "arrival": "1ns", "hash": 0, "duration": "0s"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := Write(&b, s); err != nil {
			t.Fatal(err)
		}
		back, err := Parse(&b)
		if err != nil {
			t.Fatalf("Parse(Write(s)) error %v\n%s", err, b.String())
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("Parse(Write(s)) = %+v, want %+v", back, s)
		}
		if len(s.Requests) > 500 || len(s.Reconfigurations) > 20 || s.Config.Queues > 1024 {
			return
		}
		res, err := Run(s, NewEngine())
		if err != nil {
			t.Fatalf("Run error %v", err)
		}
		checkResults(t, s, res)
	})
}

// checkResults checks the invariants every run must satisfy.
func checkResults(t *testing.T, s *Scenario, res []Result) {
	t.Helper()
	if len(res) != len(s.Requests) {
		t.Fatalf("Run returned %d results for %d requests", len(res), len(s.Requests))
	}
	byOrder := map[int]Result{}
	for _, r := range res {
		if r.Outcome == OutcomeDispatched {
			byOrder[r.Order] = r
		} else if r.Order != -1 {
			t.Errorf("%s: not dispatched but Order %d", r.ID, r.Order)
		}
	}
	for k := range len(byOrder) {
		r, ok := byOrder[k]
		if !ok {
			t.Fatalf("dispatch orders are not 0..%d: %d missing", len(byOrder)-1, k)
		}
		if prev, ok := byOrder[k-1]; ok && prev.DispatchedAt > r.DispatchedAt {
			t.Errorf("%s dispatched at %v before %s at %v", prev.ID, prev.DispatchedAt, r.ID, r.DispatchedAt)
		}
	}
	maxQueues := max(s.Config.Queues, 0)
	for _, rc := range s.Reconfigurations {
		maxQueues = max(maxQueues, rc.Config.Queues)
	}
	for i, r := range res {
		req := s.Requests[i]
		if r.ID != req.ID {
			t.Errorf("result %d has id %q, want %q", i, r.ID, req.ID)
		}
		if r.Queue < -1 || r.Queue >= maxQueues && r.Queue != -1 {
			t.Errorf("%s: queue %d outside [-1, %d)", r.ID, r.Queue, maxQueues)
		}
		switch r.Outcome {
		case OutcomeDispatched:
			if r.Reason != ReasonNone || r.DispatchedAt < req.Arrival {
				t.Errorf("%s: dispatched with reason %q at %v, arrival %v", r.ID, r.Reason, r.DispatchedAt, req.Arrival)
			}
			if req.WaitLimit > 0 && r.DispatchedAt > req.Arrival+req.WaitLimit {
				t.Errorf("%s: dispatched at %v, after its wait limit (arrival %v + %v)", r.ID, r.DispatchedAt, req.Arrival, req.WaitLimit)
			}
		case OutcomeRejected:
			switch r.Reason {
			case ReasonQueueFull, ReasonConcurrencyLimit:
				if r.Queue != -1 {
					t.Errorf("%s: rejected (%s) with queue %d, want -1", r.ID, r.Reason, r.Queue)
				}
			case ReasonTimeOut:
				if req.WaitLimit == 0 || r.Queue < 0 {
					t.Errorf("%s: timed out with wait limit %v and queue %d", r.ID, req.WaitLimit, r.Queue)
				}
			default:
				t.Errorf("%s: rejected with reason %q", r.ID, r.Reason)
			}
		case OutcomeWaiting:
			if r.Reason != ReasonNone || r.Queue < 0 || req.WaitLimit > 0 {
				t.Errorf("%s: left waiting with reason %q, queue %d, wait limit %v", r.ID, r.Reason, r.Queue, req.WaitLimit)
			}
		default:
			t.Errorf("%s: outcome %q", r.ID, r.Outcome)
		}
	}
}

// FuzzParseHash: whatever ParseHash accepts, it reads back the same from
// the value's decimal and 0x-hexadecimal forms, and it accepts only those
// forms (digits, with an optional 0x or 0X prefix before hex digits).
func FuzzParseHash(f *testing.F) {
	for _, s := range []string{"0", "12345", "0x00000000deadbeef", "0XFF", "18446744073709551615", "0x10000000000000000", "-1", "0x", "1_000", "+5", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseHash(s)
		if err != nil {
			return
		}
		digits, hex := strings.CutPrefix(strings.ToLower(s), "0x")
		set := "0123456789"
		if hex {
			set += "abcdef"
		}
		if digits == "" || strings.Trim(digits, set) != "" {
			t.Fatalf("ParseHash(%q) = %d, accepting a form other than decimal or 0x-hex", s, v)
		}
		for _, form := range []string{strconv.FormatUint(v, 10), "0x" + strconv.FormatUint(v, 16), fmt.Sprintf("%#016x", v)} {
			if back, err := ParseHash(form); err != nil || back != v {
				t.Fatalf("ParseHash(%q) = %d, %v; want %d (from %q)", form, back, err, v, s)
			}
		}
	})
}
