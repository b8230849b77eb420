package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/fairslice/fairslice/flowschema"
)

const explainUsage = `Usage: fairslice explain [--config FILE | --kubeconfig FILE] --user NAME [--groups G1,G2] --verb VERB
         (--path PATH | --resource R [--subresource S] [--api-group G] [--namespace NS] [--name N]) [-o text|json|yaml]

Classifies one request and explains the decision: the FlowSchema that
matched, through which rule and subject, the priority level and flow, and
for every FlowSchema tried before it why it did not match; and, when a
non-resource rule matched by a prefix such as /healthz/*, which one.
The request is a URL path and verb, parsed as kube-apiserver parses it
(--path /api/v1/nodes/n1 --verb get is a resource request for node n1), or
its fields with --resource; fields given with --path must agree with it.
FILE is as for "fairslice classify" (default: the bootstrap configuration).

-o json (or yaml): {"request": {...as in classify}, "flowSchema",
"priorityLevel", "distinguisher", "fallback", "exempt", "rule", "subject",
"prefixMatch", "tried": [{"flowSchema", "matchingPrecedence",
"priorityLevel", "matched", "reasons": [...]}]}

Exit status: 0 success, 1 unreadable or invalid configuration or a
request whose fields contradict each other, 2 bad command line.

Flags:
`

// runExplain implements "fairslice explain".
func runExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf configFlags
	cf.register(fs)
	var spec requestSpec
	var groups listFlag
	fs.StringVar(&spec.User, "user", "", "the user `NAME` (required)")
	fs.Var(&groups, "groups", "the user's `GROUPS`, comma-separated (repeatable)")
	fs.StringVar(&spec.Verb, "verb", "", "the `VERB` (get, list, watch, create, ...; the lowercase HTTP method for a non-resource path)")
	fs.StringVar(&spec.APIGroup, "api-group", "", "the API `GROUP` (\"\" is core)")
	fs.StringVar(&spec.Resource, "resource", "", "the `RESOURCE` (makes a resource request)")
	fs.StringVar(&spec.Subresource, "subresource", "", "the `SUBRESOURCE`")
	fs.StringVar(&spec.Namespace, "namespace", "", "the `NAMESPACE` (empty: cluster-scoped)")
	fs.StringVar(&spec.Name, "name", "", "the object `NAME`")
	fs.StringVar(&spec.Path, "path", "", "the request's URL `PATH`")
	out := outputFlag(fs)
	fs.Usage = func() { fmt.Fprint(fs.Output(), explainUsage); fs.PrintDefaults() }
	rest, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	switch {
	case len(rest) > 0:
		return usageError(stderr, "explain", "unexpected argument %q", rest[0])
	case spec.User == "":
		return usageError(stderr, "explain", "--user is required")
	case spec.Verb == "":
		return usageError(stderr, "explain", "--verb is required")
	case spec.Resource == "" && spec.Path == "":
		return usageError(stderr, "explain", "give --path or --resource")
	}
	spec.Groups = groups
	req, err := spec.request()
	if err != nil {
		return failure(stderr, "explain", fmt.Errorf("the request: %w", err))
	}
	cfg, err := cf.load(stderr, "explain")
	if err != nil {
		return fail(stderr, "explain", err)
	}
	c, err := flowschema.Compile(cfg)
	if err != nil {
		return failure(stderr, "explain", err)
	}
	e := c.Explain(&req)
	res := explainResultOf(c, &e)
	text := func(w io.Writer) error {
		if _, err := fmt.Fprint(w, e.String()); err != nil {
			return err
		}
		if res.PrefixMatch != "" {
			_, err := fmt.Fprintf(w, "path %s matched nonResourceURLs entry %q by its prefix %q\n", req.Path, res.PrefixMatch, urlPrefix(res.PrefixMatch))
			return err
		}
		return nil
	}
	if err := out.write(stdout, res, text); err != nil {
		return failure(stderr, "explain", err)
	}
	return exitOK
}

// explainResult is the -o json shape of explain.
type explainResult struct {
	Request flowschema.Request `json:"request"`
	classification
	Fallback bool `json:"fallback"`
	Exempt   bool `json:"exempt"`
	// Rule is the index of the matching rule, -1 for the fallback.
	Rule    int    `json:"rule"`
	Subject string `json:"subject"`
	// PrefixMatch is the nonResourceURLs entry that matched the path by
	// prefix, or "" for an exact match.
	PrefixMatch string        `json:"prefixMatch"`
	Tried       []triedSchema `json:"tried"`
}

type triedSchema struct {
	FlowSchema         string   `json:"flowSchema"`
	MatchingPrecedence int32    `json:"matchingPrecedence"`
	PriorityLevel      string   `json:"priorityLevel"`
	Matched            bool     `json:"matched"`
	Reasons            []string `json:"reasons"`
}

func explainResultOf(c *flowschema.Classifier, e *flowschema.Explanation) explainResult {
	d := e.Decision
	r := explainResult{Request: e.Request, classification: classificationOf(d), Fallback: d.Fallback, Exempt: d.Exempt, Rule: d.Rule, Tried: []triedSchema{}}
	for _, t := range e.Tried {
		r.Tried = append(r.Tried, triedSchema{FlowSchema: t.FlowSchema, MatchingPrecedence: t.MatchingPrecedence,
			PriorityLevel: t.PriorityLevel, Matched: t.Matched, Reasons: t.Reasons})
		if t.Matched {
			r.Subject = t.SubjectText
			if t.NonResourceRule >= 0 && t.Rule >= 0 {
				r.PrefixMatch = prefixMatch(c, d.SchemaIndex, t.Rule, t.NonResourceRule, e.Request.Path)
			}
		}
	}
	return r
}

// prefixMatch returns the nonResourceURLs entry of the given rule that
// matched path by prefix ("/healthz" or "/healthz/*" for /healthz/etcd),
// or "" if an exact entry (or "*") matched.
func prefixMatch(c *flowschema.Classifier, schema, rule, nonResource int, path string) string {
	schemas := c.FlowSchemas()
	if schema < 0 || schema >= len(schemas) || rule >= len(schemas[schema].Spec.Rules) {
		return ""
	}
	nr := schemas[schema].Spec.Rules[rule].NonResourceRules
	if nonResource >= len(nr) {
		return ""
	}
	for _, u := range nr[nonResource].NonResourceURLs {
		if u == path || u == "*" {
			return ""
		}
	}
	for _, u := range nr[nonResource].NonResourceURLs {
		if strings.HasPrefix(path, urlPrefix(u)) {
			return u
		}
	}
	return ""
}

// urlPrefix is the prefix by which a nonResourceURLs entry matches paths
// below it, as upstream matches them: "/healthz/*" and "/healthz" both
// match "/healthz/etcd" through "/healthz/".
func urlPrefix(entry string) string {
	if p, ok := strings.CutSuffix(entry, "*"); ok {
		return p
	}
	return entry + "/"
}
