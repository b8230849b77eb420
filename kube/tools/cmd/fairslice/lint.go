package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fairslice/fairslice/flowschema"
)

const lintUsage = `Usage: fairslice lint [-o text|json|yaml] (FILE... | --kubeconfig FILE | --cluster)

Finds API Priority and Fairness configuration mistakes that validation does
not catch, one per line: FlowSchemas that can never be selected (shadowed by
earlier ones, or with no rule that can match), FlowSchemas whose priority
level is missing (dangling; upstream skips them), priority levels the API
server would ignore, and priority levels no FlowSchema reaches. Each line
names the objects responsible. FILE is as for "fairslice validate". A
clean configuration prints "no findings".

-o json (or yaml): {"findings": [{"kind", "object", "name", "causes": [...],
"message"}]}

Exit status: 0 no finding, 1 any finding or unreadable input, 2 bad command
line.

Flags:
`

// lintFinding is one finding in lint's -o json shape.
type lintFinding struct {
	Kind    string   `json:"kind"`
	Object  string   `json:"object"`
	Name    string   `json:"name"`
	Causes  []string `json:"causes"`
	Message string   `json:"message"`
}

// runLint implements "fairslice lint".
func runLint(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cluster clusterFlags
	cluster.register(fs)
	out := outputFlag(fs)
	fs.Usage = func() { fmt.Fprint(fs.Output(), lintUsage); fs.PrintDefaults() }
	files, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	cfg, code := configFromArgs(stderr, "lint", files, &cluster)
	if cfg == nil {
		return code
	}
	findings, err := flowschema.Lint(cfg)
	if err != nil {
		return failure(stderr, "lint", err)
	}
	res := struct {
		Findings []lintFinding `json:"findings"`
	}{Findings: []lintFinding{}}
	for _, f := range findings {
		causes := f.Causes
		if causes == nil {
			causes = []string{}
		}
		res.Findings = append(res.Findings, lintFinding{Kind: string(f.Kind), Object: f.Object, Name: f.Name, Causes: causes, Message: f.Message})
	}
	text := func(w io.Writer) error {
		for _, f := range findings {
			fmt.Fprintln(w, f)
		}
		if len(findings) == 0 {
			fmt.Fprintln(w, "no findings")
		}
		return nil
	}
	if err := out.write(stdout, res, text); err != nil {
		return failure(stderr, "lint", err)
	}
	if len(findings) > 0 {
		fmt.Fprintf(stderr, "fairslice lint: %s\n", plural(len(findings), "finding"))
		return exitFailure
	}
	return exitOK
}
