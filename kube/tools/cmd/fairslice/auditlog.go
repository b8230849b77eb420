package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/fairslice/fairslice/flowschema"
)

// auditEvent is the part of an audit.k8s.io/v1 Event that classification
// and replay need, as kube-apiserver's log backend writes it (one JSON
// object per line).
type auditEvent struct {
	Kind       string `json:"kind"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"impersonatedUser"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// auditRequest is one request of an audit log: what APF classifies, when it
// arrived, and how long it took (0 when the log has only its arrival).
type auditRequest struct {
	Request  flowschema.Request
	Arrival  time.Time
	Duration time.Duration
	Complete bool // a ResponseComplete or Panic event gave the duration
}

// readAuditLog reads the requests of an audit log: events are grouped by
// auditID (one request logs up to four stages), the user is the
// impersonated one when any stage names one (APF runs after impersonation;
// the RequestReceived stage is logged before it and never does), and
// the request is its requestURI and verb, parsed as kube-apiserver parses
// them. Lines that are not events, or whose request does not parse, are
// counted in skipped and the first few reported in problems.
func readAuditLog(name string) (reqs []auditRequest, skipped int, problems []string, err error) {
	data, err := readInput(name)
	if err != nil {
		return nil, 0, nil, err
	}
	byID := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	line := 0
	skip := func(format string, args ...any) {
		skipped++
		if len(problems) < 5 {
			problems = append(problems, fmt.Sprintf("%s: line %d: ", inputName(name), line)+fmt.Sprintf(format, args...))
		}
	}
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Kind != "Event" {
			skip("not an audit.k8s.io/v1 Event (%v)", err)
			continue
		}
		done := ev.Stage == "ResponseComplete" || ev.Stage == "Panic"
		if i, ok := byID[ev.AuditID]; ok && ev.AuditID != "" {
			// kube-apiserver logs RequestReceived before impersonation: a
			// later stage names the impersonated user.
			if ev.ImpersonatedUser != nil {
				reqs[i].Request.User, reqs[i].Request.Groups = ev.ImpersonatedUser.Username, ev.ImpersonatedUser.Groups
			}
			if done {
				reqs[i].Duration = ev.StageTimestamp.Sub(reqs[i].Arrival)
				reqs[i].Complete = true
			}
			continue
		}
		user := ev.User.Username
		groups := ev.User.Groups
		if ev.ImpersonatedUser != nil {
			user, groups = ev.ImpersonatedUser.Username, ev.ImpersonatedUser.Groups
		}
		spec := requestSpec{Request: flowschema.Request{User: user, Groups: groups, Verb: ev.Verb, Path: ev.RequestURI}}
		r, err := spec.request()
		if err != nil {
			skip("%v", err)
			continue
		}
		ar := auditRequest{Request: r, Arrival: ev.RequestReceivedTimestamp}
		if done {
			ar.Duration, ar.Complete = ev.StageTimestamp.Sub(ev.RequestReceivedTimestamp), true
		}
		byID[ev.AuditID] = len(reqs)
		reqs = append(reqs, ar)
	}
	if err := sc.Err(); err != nil {
		return nil, 0, nil, fmt.Errorf("%s: %w", inputName(name), err)
	}
	if len(reqs) == 0 {
		return nil, skipped, problems, fmt.Errorf("%s: no audit events", inputName(name))
	}
	slices.SortStableFunc(reqs, func(a, b auditRequest) int { return a.Arrival.Compare(b.Arrival) })
	return reqs, skipped, problems, nil
}

// flowCount is the number of requests of one flow, in classify
// --audit-log's output.
type flowCount struct {
	classification
	Requests int `json:"requests"`
}

// auditClassification is the -o json shape of classify --audit-log.
type auditClassification struct {
	Requests int         `json:"requests"`
	Skipped  int         `json:"skipped"`
	Flows    []flowCount `json:"flows"`
}

// classifyAuditLog implements classify --audit-log.
func classifyAuditLog(name string, cfg *flowschema.Config, out outputFormat, stdout, stderr io.Writer) int {
	reqs, skipped, problems, err := readAuditLog(name)
	for _, p := range problems {
		fmt.Fprintf(stderr, "fairslice classify: skipped %s\n", p)
	}
	if err != nil {
		return failure(stderr, "classify", err)
	}
	c, err := flowschema.Compile(cfg)
	if err != nil {
		return failure(stderr, "classify", err)
	}
	counts := map[classification]int{}
	for i := range reqs {
		counts[classificationOf(c.Classify(&reqs[i].Request))]++
	}
	res := auditClassification{Requests: len(reqs), Skipped: skipped, Flows: []flowCount{}}
	for k, n := range counts {
		res.Flows = append(res.Flows, flowCount{classification: k, Requests: n})
	}
	slices.SortFunc(res.Flows, func(a, b flowCount) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.FlowSchema, b.FlowSchema),
			cmp.Compare(a.PriorityLevel, b.PriorityLevel), cmp.Compare(a.Distinguisher, b.Distinguisher))
	})
	text := func(w io.Writer) error {
		fmt.Fprintf(w, "%d requests (%d lines skipped)\n", res.Requests, res.Skipped)
		fmt.Fprintf(w, "%8s  %-28s %-20s %s\n", "REQUESTS", "FLOWSCHEMA", "PRIORITY LEVEL", "DISTINGUISHER")
		for _, f := range res.Flows {
			fmt.Fprintf(w, "%8d  %-28s %-20s %s\n", f.Requests, f.FlowSchema, f.PriorityLevel, orDash(f.Distinguisher))
		}
		return nil
	}
	if err := out.write(stdout, res, text); err != nil {
		return failure(stderr, "classify", err)
	}
	return exitOK
}
