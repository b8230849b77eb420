package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fairslice/fairslice/flowschema"
)

const explainUsage = `Usage: fairslice explain [--config FILE] --user NAME [--groups G1,G2] --verb VERB
         (--resource R [--subresource S] [--api-group G] [--namespace NS] [--name N] | --path PATH)

Classifies one request and explains the decision: the FlowSchema that
matched, through which rule and subject, the priority level and flow, and
for every FlowSchema tried before it why it did not match. FILE is as for
"fairslice classify" (default: the bootstrap configuration). A request with
--resource is a resource request; otherwise --path makes it a non-resource
request.

Flags:
`

// runExplain implements "fairslice explain".
func runExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `FILE` (default: the bootstrap configuration)")
	var req flowschema.Request
	var groups listFlag
	fs.StringVar(&req.User, "user", "", "the user `NAME`")
	fs.Var(&groups, "groups", "the user's `GROUPS`, comma-separated (repeatable)")
	fs.StringVar(&req.Verb, "verb", "", "the `VERB` (get, list, watch, create, ...; the lowercase HTTP method for a path)")
	fs.StringVar(&req.APIGroup, "api-group", "", "the API `GROUP` (\"\" is core)")
	fs.StringVar(&req.Resource, "resource", "", "the `RESOURCE` (makes a resource request)")
	fs.StringVar(&req.Subresource, "subresource", "", "the `SUBRESOURCE`")
	fs.StringVar(&req.Namespace, "namespace", "", "the `NAMESPACE` (empty: cluster-scoped)")
	fs.StringVar(&req.Name, "name", "", "the object `NAME`")
	fs.StringVar(&req.Path, "path", "", "the request `PATH`")
	fs.Usage = func() { fmt.Fprint(fs.Output(), explainUsage); fs.PrintDefaults() }
	rest, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	switch {
	case len(rest) > 0:
		return usageError(stderr, "explain", "unexpected argument %q", rest[0])
	case req.Verb == "":
		return usageError(stderr, "explain", "--verb is required")
	case req.Resource == "" && req.Path == "":
		return usageError(stderr, "explain", "give --resource or --path")
	}
	req.Groups = groups
	req.ResourceRequest = req.Resource != ""
	cfg, err := loadConfig(*config)
	if err != nil {
		return failure(stderr, "explain", err)
	}
	c, err := flowschema.Compile(cfg)
	if err != nil {
		return failure(stderr, "explain", err)
	}
	e := c.Explain(&req)
	fmt.Fprint(stdout, e.String())
	return exitOK
}
