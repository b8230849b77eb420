package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Parse reads a scenario file and validates it. It reports every problem it
// finds, each naming the request (by index and id) or configuration field
// at fault. Unknown fields, duplicate ids, negative or malformed durations,
// hashes that are not unsigned 64-bit integer literals, and configurations
// that no queue set accepts are all errors. Requests need not be in arrival
// order. Hashes are read from the literal text, so values above 2^53 keep
// every bit.
func Parse(r io.Reader) (*Scenario, error) {
	dec := json.NewDecoder(r)
	var top json.RawMessage
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("scenario: unexpected data after the top-level object")
	}
	// Members are matched by exact name (encoding/json's struct decoding
	// would also accept "Config" or "REQUESTS").
	m, errs := fields("top level", top, []string{"config", "requests", "reconfigurations"}, []string{"config", "requests"})
	if m == nil {
		return nil, errors.Join(errs...)
	}
	var raw struct {
		Requests         []json.RawMessage
		Reconfigurations []json.RawMessage
	}
	for _, f := range []struct {
		name string
		dst  *[]json.RawMessage
	}{{"requests", &raw.Requests}, {"reconfigurations", &raw.Reconfigurations}} {
		if v, ok := m[f.name]; ok {
			if err := json.Unmarshal(v, f.dst); err != nil {
				errs = append(errs, fmt.Errorf("scenario: %s: must be an array of objects", f.name))
			}
		}
	}
	addErr := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("scenario: "+format, args...))
	}
	s := &Scenario{}
	if v, ok := m["config"]; ok {
		c, cerrs := parseConfig("config", v)
		s.Config = c
		errs = append(errs, cerrs...)
	}
	seen := make(map[string]int, len(raw.Requests))
	for i, msg := range raw.Requests {
		req, rerrs := parseRequest(i, msg)
		errs = append(errs, rerrs...)
		if req.ID != "" {
			if j, dup := seen[req.ID]; dup {
				addErr("requests[%d]: duplicate id %q (also requests[%d])", i, req.ID, j)
			} else {
				seen[req.ID] = i
			}
		}
		s.Requests = append(s.Requests, req)
	}
	for i, msg := range raw.Reconfigurations {
		rc, rerrs := parseReconfiguration(i, msg)
		errs = append(errs, rerrs...)
		s.Reconfigurations = append(s.Reconfigurations, rc)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// fields decodes a JSON object into its members, rejecting members not in
// known and reporting members in required that are absent.
func fields(where string, msg json.RawMessage, known, required []string) (map[string]json.RawMessage, []error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil || m == nil {
		return nil, []error{fmt.Errorf("scenario: %s: must be a JSON object", where)}
	}
	var errs []error
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(known, k) {
			errs = append(errs, fmt.Errorf("scenario: %s: unknown field %q", where, k))
		}
	}
	for _, k := range required {
		if _, ok := m[k]; !ok {
			errs = append(errs, fmt.Errorf("scenario: %s: missing field %q", where, k))
		}
	}
	return m, errs
}

var (
	configFields  = []string{"queues", "handSize", "queueLengthLimit", "concurrencyLimit", "fixStaleQueueRemoval", "fixZeroLimitAdmission", "clampFinalSeatsWithoutQueues"}
	requestFields = []string{"id", "arrival", "hash", "initialSeats", "finalSeats", "additionalLatency", "duration", "waitLimit"}
)

func parseConfig(where string, msg json.RawMessage) (Config, []error) {
	var c Config
	m, errs := fields(where, msg, configFields, []string{"queues", "concurrencyLimit"})
	if m == nil {
		return c, errs
	}
	get := func(name string, dst *int) {
		v, ok := m[name]
		if !ok {
			return
		}
		n, err := parseInt(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("scenario: %s.%s: %v", where, name, err))
			return
		}
		*dst = n
	}
	get("queues", &c.Queues)
	get("handSize", &c.HandSize)
	get("queueLengthLimit", &c.QueueLengthLimit)
	get("concurrencyLimit", &c.ConcurrencyLimit)
	for _, o := range []struct {
		name string
		dst  *bool
	}{
		{"fixStaleQueueRemoval", &c.FixStaleQueueRemoval},
		{"fixZeroLimitAdmission", &c.FixZeroLimitAdmission},
		{"clampFinalSeatsWithoutQueues", &c.ClampFinalSeatsWithoutQueues},
	} {
		if v, ok := m[o.name]; ok {
			b, err := parseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("scenario: %s.%s: %v", where, o.name, err))
			}
			*o.dst = b
		}
	}
	if c.Queues >= 1 {
		for _, name := range []string{"handSize", "queueLengthLimit"} {
			if _, ok := m[name]; !ok {
				errs = append(errs, fmt.Errorf("scenario: %s: missing field %q (required when queues ≥ 1)", where, name))
			}
		}
	}
	if len(errs) > 0 {
		return c, errs
	}
	for _, err := range c.problems() {
		errs = append(errs, fmt.Errorf("scenario: %s: %w", where, err))
	}
	return c, errs
}

func parseRequest(i int, msg json.RawMessage) (Request, []error) {
	req := Request{InitialSeats: 1}
	where := fmt.Sprintf("requests[%d]", i)
	var idOnly struct {
		ID json.RawMessage `json:"id"`
	}
	var idErr error
	if json.Unmarshal(msg, &idOnly) == nil && idOnly.ID != nil {
		if err := json.Unmarshal(idOnly.ID, &req.ID); err != nil || req.ID == "" {
			req.ID = ""
			idErr = fmt.Errorf("scenario: %s: id: must be a non-empty string, got %s", where, idOnly.ID)
		} else {
			where = fmt.Sprintf("requests[%d] (id %q)", i, req.ID)
		}
	}
	m, errs := fields(where, msg, requestFields, []string{"id", "arrival", "hash", "duration"})
	if idErr != nil {
		errs = append(errs, idErr)
	}
	if m == nil {
		return req, errs
	}
	bad := func(field string, err error) {
		errs = append(errs, fmt.Errorf("scenario: %s: %s: %v", where, field, err))
	}
	dur := func(field string, dst *time.Duration) {
		if v, ok := m[field]; ok {
			d, err := parseDuration(v)
			if err != nil {
				bad(field, err)
				return
			}
			*dst = d
		}
	}
	seats := func(field string, dst *int, lo int) {
		if v, ok := m[field]; ok {
			n, err := parseInt(v)
			switch {
			case err != nil:
				bad(field, err)
			case n < lo || n > MaxSeats:
				bad(field, fmt.Errorf("%d is outside [%d, %d]", n, lo, MaxSeats))
			default:
				*dst = n
			}
		}
	}
	dur("arrival", &req.Arrival)
	if v, ok := m["hash"]; ok {
		h, err := parseHashValue(v)
		if err != nil {
			bad("hash", err)
		}
		req.Hash = h
	}
	seats("initialSeats", &req.InitialSeats, 1)
	seats("finalSeats", &req.FinalSeats, 0)
	dur("additionalLatency", &req.AdditionalLatency)
	dur("duration", &req.Duration)
	dur("waitLimit", &req.WaitLimit)
	return req, errs
}

func parseReconfiguration(i int, msg json.RawMessage) (Reconfiguration, []error) {
	var rc Reconfiguration
	where := fmt.Sprintf("reconfigurations[%d]", i)
	m, errs := fields(where, msg, []string{"at", "config"}, []string{"at", "config"})
	if m == nil {
		return rc, errs
	}
	if v, ok := m["at"]; ok {
		d, err := parseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("scenario: %s: at: %v", where, err))
		}
		rc.At = d
	}
	if v, ok := m["config"]; ok {
		c, cerrs := parseConfig(where+".config", v)
		rc.Config = c
		errs = append(errs, cerrs...)
	}
	return rc, errs
}

// parseDuration reads a JSON string holding a non-negative Go duration.
func parseDuration(v json.RawMessage) (time.Duration, error) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return 0, fmt.Errorf("must be a string holding a Go duration such as \"1.5s\", got %s", v)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	if d > MaxDuration {
		return 0, fmt.Errorf("duration %q exceeds the maximum %v", s, MaxDuration)
	}
	return d, nil
}

// parseHashValue reads a hash: a JSON number literal made of decimal
// digits only (read without going through float64), or a JSON string that
// ParseHash accepts.
func parseHashValue(v json.RawMessage) (uint64, error) {
	lit := string(bytes.TrimSpace(v))
	if strings.HasPrefix(lit, `"`) {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return 0, fmt.Errorf("invalid string %s", lit)
		}
		return ParseHash(s)
	}
	if lit == "" || strings.Trim(lit, "0123456789") != "" {
		return 0, fmt.Errorf("must be an unsigned 64-bit integer literal or a string holding one in decimal or 0x-hexadecimal, got %s", lit)
	}
	n, err := strconv.ParseUint(lit, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s does not fit in 64 bits", lit)
	}
	return n, nil
}

// ParseHash parses a 64-bit flow hash written in decimal or, with a 0x or
// 0X prefix, in hexadecimal, as "fairslice deal" prints it (for example
// 0x00000000deadbeef). Unlike strconv.ParseUint with base 0, a leading
// zero does not mean octal, and no sign or underscore is accepted.
func ParseHash(s string) (uint64, error) {
	digits, base := s, 10
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		digits, base = s[2:], 16
	}
	if digits == "" || digits[0] == '+' || digits[0] == '-' || strings.Contains(digits, "_") {
		return 0, fmt.Errorf("%q is not a decimal or 0x-hexadecimal number", s)
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("%q does not fit in 64 bits", s)
		}
		return 0, fmt.Errorf("%q is not a decimal or 0x-hexadecimal number", s)
	}
	return v, nil
}

// parseBool reads the JSON literal true or false (not null).
func parseBool(v json.RawMessage) (bool, error) {
	switch lit := string(bytes.TrimSpace(v)); lit {
	case "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, fmt.Errorf("must be true or false, got %s", lit)
	}
}

// parseInt reads a JSON integer literal (optionally negative).
func parseInt(v json.RawMessage) (int, error) {
	lit := string(bytes.TrimSpace(v))
	digits := strings.TrimPrefix(lit, "-")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, fmt.Errorf("must be an integer literal, got %s", lit)
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	if err != nil || n > math.MaxInt32 || n < math.MinInt32 {
		return 0, fmt.Errorf("%s is out of range", lit)
	}
	return int(n), nil
}
