package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/fairslice/fairslice/flowschema"
)

const classifyUsage = `Usage: fairslice classify [--config FILE] [--upstream] REQUESTS.jsonl

Classifies requests as an API server's API Priority and Fairness does.
FILE holds FlowSchemas and PriorityLevelConfigurations (Kubernetes YAML or
JSON, several documents or a List, as "kubectl get
flowschemas,prioritylevelconfigurations -o yaml" prints); without it, the
default bootstrap configuration. Each line of REQUESTS.jsonl ("-" for
standard input) is a request:

  {"user": "alice", "groups": ["system:authenticated"], "verb": "list",
   "apiGroup": "", "resource": "pods", "subresource": "", "namespace": "default",
   "name": "", "path": "/api/v1/namespaces/default/pods", "resourceRequest": true}

and the output has one line per request:

  {"flowSchema": "...", "priorityLevel": "...", "distinguisher": "..."}

--upstream classifies with Kubernetes' own APF controller (k8s.io/apiserver
v0.37.2) instead of fairslice's.

Flags:
`

// runClassify implements "fairslice classify".
func runClassify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice classify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `FILE` (default: the bootstrap configuration)")
	upstream := fs.Bool("upstream", false, "use Kubernetes' own APF controller")
	fs.Usage = func() { fmt.Fprint(fs.Output(), classifyUsage); fs.PrintDefaults() }
	files, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if len(files) != 1 {
		return usageError(stderr, "classify", "expected one requests file, got %d", len(files))
	}
	if refuseUpstream(stderr, "classify", *upstream) {
		return exitUsage
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		return failure(stderr, "classify", err)
	}
	data, err := readInput(files[0])
	if err != nil {
		return failure(stderr, "classify", err)
	}
	reqs, err := parseRequests(data)
	if err != nil {
		return failure(stderr, "classify", fmt.Errorf("%s: %w", files[0], err))
	}
	var classify func(*flowschema.Request) classification
	if *upstream {
		c, stop, err := upstreamClassifier(cfg, 600)
		if err != nil {
			return failure(stderr, "classify", err)
		}
		defer stop()
		classify = c
	} else {
		c, err := flowschema.Compile(cfg)
		if err != nil {
			return failure(stderr, "classify", err)
		}
		classify = func(r *flowschema.Request) classification {
			d := c.Classify(r)
			return classification{FlowSchema: d.FlowSchema, PriorityLevel: d.PriorityLevel, Distinguisher: d.Distinguisher}
		}
	}
	w := bufio.NewWriter(stdout)
	for i := range reqs {
		r := classify(&reqs[i])
		fmt.Fprintf(w, "{\"flowSchema\": %s, \"priorityLevel\": %s, \"distinguisher\": %s}\n",
			strconv.Quote(r.FlowSchema), strconv.Quote(r.PriorityLevel), strconv.Quote(r.Distinguisher))
	}
	if err := w.Flush(); err != nil {
		return failure(stderr, "classify", err)
	}
	return exitOK
}

// classification is one request's FlowSchema, priority level and flow
// distinguisher.
type classification struct {
	FlowSchema    string `json:"flowSchema"`
	PriorityLevel string `json:"priorityLevel"`
	Distinguisher string `json:"distinguisher"`
}

// parseRequests reads one JSON request per non-empty line.
func parseRequests(data []byte) ([]flowschema.Request, error) {
	var reqs []flowschema.Request
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var r flowschema.Request
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}
