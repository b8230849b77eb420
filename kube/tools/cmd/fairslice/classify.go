package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/fairslice/fairslice/flowschema"
)

const classifyUsage = `Usage: fairslice classify [--config FILE | --kubeconfig FILE] [--upstream] [-o text|json|yaml] REQUESTS.jsonl
       fairslice classify [--config FILE | --kubeconfig FILE] --audit-log AUDIT.log [-o text|json|yaml]

Classifies requests as an API server's API Priority and Fairness does.
FILE holds FlowSchemas and PriorityLevelConfigurations (Kubernetes YAML or
JSON, several documents or a List, as "kubectl get
flowschemas,prioritylevelconfigurations -o yaml" prints); without it, the
default bootstrap configuration; --kubeconfig (or --cluster) reads the
cluster's. A configuration that "fairslice validate" refuses is refused
unless --allow-invalid.

Each line of REQUESTS.jsonl ("-" for standard input) is a request, given
as a URL path and verb, parsed as kube-apiserver parses it:

  {"user": "system:node:n1", "groups": ["system:nodes"], "verb": "get", "path": "/api/v1/nodes/n1"}

or by its fields (a request with a resource is a resource request):

  {"user": "alice", "groups": ["system:authenticated"], "verb": "list",
   "apiGroup": "", "resource": "pods", "subresource": "", "namespace": "default", "name": ""}

Fields given with a path must agree with it, and "resourceRequest" (optional)
with both; a contradiction is an error naming the line and the field.

Output, text (the default), one line per request:

  {"flowSchema": "...", "priorityLevel": "...", "distinguisher": "..."}

-o json (or yaml): {"results": [{"request": {"user": ..., "groups": [...],
"verb": ..., "apiGroup": ..., "resource": ..., "subresource": ...,
"namespace": ..., "name": ..., "path": ..., "resourceRequest": ...},
"flowSchema": ..., "priorityLevel": ..., "distinguisher": ...}, ...]}

--audit-log reads kube-apiserver audit events instead (see "fairslice
simulate --help") and prints requests per FlowSchema, priority level and
flow, most first; -o json: {"requests": N, "skipped": N, "flows":
[{"flowSchema", "priorityLevel", "distinguisher", "requests"}, ...]}.

--upstream classifies with Kubernetes' own APF controller (k8s.io/apiserver
v0.37.2) instead of fairslice's; it is in binaries built with -tags upstream.

Exit status: 0 success, 1 unreadable or invalid input or configuration, 2
bad command line.

Flags:
`

// runClassify implements "fairslice classify".
func runClassify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice classify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf configFlags
	cf.register(fs)
	upstream := fs.Bool("upstream", false, "use Kubernetes' own APF controller")
	auditLog := fs.String("audit-log", "", "classify the requests of kube-apiserver audit log `FILE`")
	out := outputFlag(fs)
	fs.Usage = func() { fmt.Fprint(fs.Output(), classifyUsage); fs.PrintDefaults() }
	files, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	switch {
	case *auditLog != "" && len(files) > 0:
		return usageError(stderr, "classify", "give a requests file or --audit-log, not both")
	case *auditLog != "" && *upstream:
		return usageError(stderr, "classify", "--audit-log and --upstream exclude each other")
	case *auditLog == "" && len(files) != 1:
		return usageError(stderr, "classify", "expected one requests file, got %d", len(files))
	}
	if refuseUpstream(stderr, "classify", *upstream) {
		return exitUsage
	}
	cfg, err := cf.load(stderr, "classify")
	if err != nil {
		return fail(stderr, "classify", err)
	}
	if *auditLog != "" {
		return classifyAuditLog(*auditLog, cfg, *out, stdout, stderr)
	}
	data, err := readInput(files[0])
	if err != nil {
		return failure(stderr, "classify", err)
	}
	reqs, err := parseRequests(inputName(files[0]), data)
	if err != nil {
		return failure(stderr, "classify", err)
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
		classify = func(r *flowschema.Request) classification { return classificationOf(c.Classify(r)) }
	}
	res := classifyResults{Results: make([]classifyResult, len(reqs))}
	for i := range reqs {
		res.Results[i] = classifyResult{Request: reqs[i], classification: classify(&reqs[i])}
	}
	if err := out.write(stdout, res, res.writeText); err != nil {
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

func classificationOf(d flowschema.Decision) classification {
	return classification{FlowSchema: d.FlowSchema, PriorityLevel: d.PriorityLevel, Distinguisher: d.Distinguisher}
}

// classifyResults is the -o json shape of classify.
type classifyResults struct {
	Results []classifyResult `json:"results"`
}

type classifyResult struct {
	Request flowschema.Request `json:"request"`
	classification
}

func (r classifyResults) writeText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, c := range r.Results {
		fmt.Fprintf(bw, "{\"flowSchema\": %s, \"priorityLevel\": %s, \"distinguisher\": %s}\n",
			strconv.Quote(c.FlowSchema), strconv.Quote(c.PriorityLevel), strconv.Quote(c.Distinguisher))
	}
	return bw.Flush()
}
