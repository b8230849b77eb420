package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseValues(t *testing.T) {
	s := mustParse(t, `{"config": {"queues": 8, "handSize": 2, "queueLengthLimit": 10, "concurrencyLimit": 1},
	 "requests": [
	  {"id": "A1", "arrival": "1.5s", "hash": 18446744073709551615, "initialSeats": 3, "finalSeats": 2, "additionalLatency": "20ms", "duration": "1m", "waitLimit": "0s"},
	  {"id": "A2", "arrival": "0s", "hash": 9007199254740993, "duration": "0s", "waitLimit": "250us"}],
	 "reconfigurations": [{"at": "2s", "config": {"queues": -1, "concurrencyLimit": 0}}]}`)
	want := &Scenario{
		Config: Config{Queues: 8, HandSize: 2, QueueLengthLimit: 10, ConcurrencyLimit: 1},
		Requests: []Request{
			{ID: "A1", Arrival: 1500 * time.Millisecond, Hash: 1<<64 - 1, InitialSeats: 3, FinalSeats: 2, AdditionalLatency: 20 * time.Millisecond, Duration: time.Minute},
			{ID: "A2", Hash: 1<<53 + 1, InitialSeats: 1, WaitLimit: 250 * time.Microsecond},
		},
		Reconfigurations: []Reconfiguration{{At: 2 * time.Second, Config: Config{Queues: -1}}},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Parse = %+v, want %+v", s, want)
	}
}

func TestParseErrors(t *testing.T) {
	const cfg = `"config": {"queues": 8, "handSize": 2, "queueLengthLimit": 10, "concurrencyLimit": 1}`
	req := func(fields string) string {
		return `{` + cfg + `, "requests": [{"id": "A", "arrival": "0s", "hash": 1, "duration": "1s"` + fields + `}]}`
	}
	tests := []struct {
		in   string
		want []string
	}{
		{``, []string{"scenario: EOF"}},
		{`{"config": {}}{}`, []string{"unexpected data after the top-level object"}},
		{`{"requests": []}`, []string{`top level: missing field "config"`}},
		{`{` + cfg + `}`, []string{`top level: missing field "requests"`}},
		{`{"Config": {}, "requests": 3}`, []string{`top level: unknown field "Config"`, `requests: must be an array of objects`}},
		{`[]`, []string{`top level: must be a JSON object`}},
		{`{` + cfg + `, "requests": [], "extra": 1}`, []string{`top level: unknown field "extra"`}},
		{`{"config": {"queues": 8}, "requests": []}`, []string{`config: missing field "concurrencyLimit"`, `missing field "handSize"`, `missing field "queueLengthLimit"`}},
		{`{"config": {"queues": 1.5, "concurrencyLimit": "1"}, "requests": []}`, []string{"config.queues: must be an integer literal, got 1.5", `config.concurrencyLimit: must be an integer literal, got "1"`}},
		{`{"config": {"queues": -2, "concurrencyLimit": -1}, "requests": []}`, []string{"queues -2 is invalid", "concurrencyLimit -1 is outside"}},
		{`{"config": {"queues": 128, "handSize": 9, "queueLengthLimit": 0, "concurrencyLimit": 1}, "requests": []}`, []string{"required entropy bits of deckSize 128 and handSize 9 is greater than 60"}},
		{`{"config": {"queues": 70000, "handSize": 1, "queueLengthLimit": 0, "concurrencyLimit": 1}, "requests": []}`, []string{"queues 70000 exceeds the maximum 65536"}},
		{`{` + cfg + `, "requests": [{}]}`, []string{`requests[0]: missing field "id"`, `missing field "arrival"`, `missing field "hash"`, `missing field "duration"`}},
		{`{` + cfg + `, "requests": [7]}`, []string{"requests[0]: must be a JSON object"}},
		{`{` + cfg + `, "requests": [{"id": 7, "arrival": "0s", "hash": 1, "duration": "1s"}]}`, []string{"requests[0]: id: must be a non-empty string, got 7"}},
		{req(`, "colour": "red"`), []string{`requests[0] (id "A"): unknown field "colour"`}},
		{req(`, "hash": -5`), []string{`(id "A"): hash: must be an unsigned 64-bit integer literal or a string holding one in decimal or 0x-hexadecimal, got -5`}},
		{req(`, "hash": 1e3`), []string{`hash: must be an unsigned 64-bit integer literal or a string`}},
		{req(`, "hash": "0xZZ"`), []string{`hash: "0xZZ" is not a decimal or 0x-hexadecimal number`}},
		{req(`, "hash": "-5"`), []string{`hash: "-5" is not a decimal or 0x-hexadecimal number`}},
		{req(`, "hash": "0x"`), []string{`hash: "0x" is not a decimal or 0x-hexadecimal number`}},
		{req(`, "hash": "0x1_0"`), []string{`hash: "0x1_0" is not a decimal or 0x-hexadecimal number`}},
		{req(`, "hash": ""`), []string{`hash: "" is not a decimal or 0x-hexadecimal number`}},
		{req(`, "hash": "0x10000000000000000"`), []string{`hash: "0x10000000000000000" does not fit in 64 bits`}},
		{req(`, "hash": true`), []string{`hash: must be an unsigned 64-bit integer literal or a string`}},
		{req(`, "hash": 18446744073709551616`), []string{`hash: 18446744073709551616 does not fit in 64 bits`}},
		{req(`, "duration": "-1s"`), []string{`(id "A"): duration: negative duration "-1s"`}},
		{req(`, "waitLimit": "soon"`), []string{`waitLimit: invalid duration "soon"`}},
		{req(`, "arrival": 5`), []string{`arrival: must be a string holding a Go duration`}},
		{req(`, "additionalLatency": "1001h"`), []string{`additionalLatency: duration "1001h" exceeds the maximum 1000h0m0s`}},
		{req(`, "initialSeats": 0`), []string{`initialSeats: 0 is outside [1, 1048576]`}},
		{req(`, "finalSeats": -1`), []string{`finalSeats: -1 is outside [0, 1048576]`}},
		{`{` + cfg + `, "requests": [{"id": "A", "arrival": "0s", "hash": 1, "duration": "1s"}, {"id": "A", "arrival": "0s", "hash": 1, "duration": "1s"}]}`,
			[]string{`requests[1]: duplicate id "A" (also requests[0])`}},
		{`{` + cfg + `, "requests": [], "reconfigurations": [{"at": "-1s"}]}`, []string{`reconfigurations[0]: missing field "config"`, `reconfigurations[0]: at: negative duration "-1s"`}},
		{`{` + cfg + `, "requests": [], "reconfigurations": [{"at": "1s", "config": {"queues": 4, "handSize": 5, "queueLengthLimit": 1, "concurrencyLimit": 1}}]}`,
			[]string{`reconfigurations[0].config: handSize 5 with queues 4`}},
		{`{"config": {"queues": 0, "concurrencyLimit": 1, "fixStaleQueueRemoval": 1}, "requests": [], "reconfigurations": [{"at": "1s", "config": {"queues": 0, "concurrencyLimit": 1, "fixStaleQueueRemoval": null}}]}`,
			[]string{`config.fixStaleQueueRemoval: must be true or false, got 1`, `reconfigurations[0].config.fixStaleQueueRemoval: must be true or false, got null`}},
		{`{"config": {"queues": 0, "concurrencyLimit": 1, "fixStaleQueueRemoval": "true"}, "requests": []}`,
			[]string{`config.fixStaleQueueRemoval: must be true or false, got "true"`}},
	}
	for _, tt := range tests {
		_, err := Parse(strings.NewReader(tt.in))
		if err == nil {
			t.Errorf("Parse(%s) = nil error, want %q", tt.in, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%s) error = %q, want it to contain %q", tt.in, err, w)
			}
		}
		if !strings.HasPrefix(err.Error(), "scenario: ") {
			t.Errorf("Parse(%s) error = %q, want the prefix \"scenario: \"", tt.in, err)
		}
	}
}

// TestParseFixStaleQueueRemoval checks the optional fixStaleQueueRemoval
// field: read where present, false where absent, and written back only
// when true; the same for the other two options.
func TestParseFixStaleQueueRemoval(t *testing.T) {
	const in = `{"config": {"queues": 2, "handSize": 1, "queueLengthLimit": 1, "concurrencyLimit": 1, "fixStaleQueueRemoval": true},
	 "requests": [],
	 "reconfigurations": [{"at": "1s", "config": {"queues": 1, "handSize": 1, "queueLengthLimit": 1, "concurrencyLimit": 1, "fixStaleQueueRemoval": false}},
	                      {"at": "2s", "config": {"queues": 1, "handSize": 1, "queueLengthLimit": 1, "concurrencyLimit": 1}}]}`
	s := mustParse(t, in)
	if got := []bool{s.Config.FixStaleQueueRemoval, s.Reconfigurations[0].Config.FixStaleQueueRemoval, s.Reconfigurations[1].Config.FixStaleQueueRemoval}; !reflect.DeepEqual(got, []bool{true, false, false}) {
		t.Errorf("Parse: fixStaleQueueRemoval of config and reconfigurations = %v, want [true false false]", got)
	}
	var b bytes.Buffer
	if err := Write(&b, s); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), `"fixStaleQueueRemoval": true`); n != 1 || strings.Contains(b.String(), "false") {
		t.Errorf("Write wrote the field %d times (want 1, only where true):\n%s", n, b.String())
	}
	if back := mustParse(t, b.String()); !reflect.DeepEqual(back, s) {
		t.Errorf("Parse(Write(s)) = %+v, want %+v", back, s)
	}
}

// TestParseOptions: every behaviour option can be set, in the top-level
// config and in reconfigurations, and survives Write.
func TestParseOptions(t *testing.T) {
	const in = `{"config": {"queues": 0, "concurrencyLimit": 0, "fixZeroLimitAdmission": true, "clampFinalSeatsWithoutQueues": true, "fixStaleQueueRemoval": true},
	 "requests": [],
	 "reconfigurations": [{"at": "1s", "config": {"queues": 0, "concurrencyLimit": 1, "clampFinalSeatsWithoutQueues": true}}]}`
	s := mustParse(t, in)
	want := Config{ConcurrencyLimit: 0, FixZeroLimitAdmission: true, ClampFinalSeatsWithoutQueues: true, FixStaleQueueRemoval: true}
	if s.Config != want {
		t.Errorf("config = %+v, want %+v", s.Config, want)
	}
	if got := s.Reconfigurations[0].Config; got != (Config{ConcurrencyLimit: 1, ClampFinalSeatsWithoutQueues: true}) {
		t.Errorf("reconfiguration config = %+v", got)
	}
	if got := s.Config.Options(); !reflect.DeepEqual(got, []string{"fixStaleQueueRemoval", "fixZeroLimitAdmission", "clampFinalSeatsWithoutQueues"}) {
		t.Errorf("Options() = %q", got)
	}
	var b bytes.Buffer
	if err := Write(&b, s); err != nil {
		t.Fatal(err)
	}
	if back := mustParse(t, b.String()); !reflect.DeepEqual(back, s) {
		t.Errorf("Parse(Write(s)) = %+v, want %+v", back, s)
	}
	if _, err := Parse(strings.NewReader(`{"config": {"queues": 0, "concurrencyLimit": 1, "fixZeroLimitAdmission": "yes", "clampFinalSeatsWithoutQueues": 0}, "requests": []}`)); err == nil ||
		!strings.Contains(err.Error(), `config.fixZeroLimitAdmission: must be true or false, got "yes"`) ||
		!strings.Contains(err.Error(), `config.clampFinalSeatsWithoutQueues: must be true or false, got 0`) {
		t.Errorf("Parse(bad options) error = %v", err)
	}
}

// TestParseHexHash: a hash may be written as "fairslice deal" prints it.
func TestParseHexHash(t *testing.T) {
	s := mustParse(t, `{"config": {"queues": 0, "concurrencyLimit": 1}, "requests": [
	  {"id": "a", "arrival": "0s", "hash": "0x00000000deadbeef", "duration": "1s"},
	  {"id": "b", "arrival": "0s", "hash": "0XFFFFFFFFFFFFFFFF", "duration": "1s"},
	  {"id": "c", "arrival": "0s", "hash": "0012", "duration": "1s"},
	  {"id": "d", "arrival": "0s", "hash": 3735928559, "duration": "1s"}]}`)
	var got []uint64
	for _, r := range s.Requests {
		got = append(got, r.Hash)
	}
	if want := []uint64{0xdeadbeef, 1<<64 - 1, 12, 0xdeadbeef}; !reflect.DeepEqual(got, want) {
		t.Errorf("hashes = %#x, want %#x", got, want)
	}
}

func TestWriteParseRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no testdata/*.json")
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := mustParse(t, string(data))
		var b bytes.Buffer
		if err := Write(&b, s); err != nil {
			t.Fatal(err)
		}
		got, err := Parse(&b)
		if err != nil {
			t.Fatalf("%s: Parse(Write(s)) error %v", name, err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("%s: Parse(Write(s)) = %+v, want %+v", name, got, s)
		}
	}
}
