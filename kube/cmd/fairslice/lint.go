package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fairslice/fairslice/flowschema"
)

const lintUsage = `Usage: fairslice lint FILE

Finds API Priority and Fairness configuration mistakes that validation does
not catch, one per line: FlowSchemas that can never be selected (shadowed by
earlier ones, or with no rule that can match), FlowSchemas whose priority
level is missing (dangling; upstream skips them), priority levels the API
server would ignore, and priority levels no FlowSchema reaches. Each line
names the objects responsible. FILE is as for "fairslice validate". Exit
status 1 if there is any finding.

Flags:
`

// runLint implements "fairslice lint".
func runLint(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), lintUsage); fs.PrintDefaults() }
	files, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if len(files) != 1 {
		return usageError(stderr, "lint", "expected one file, got %d", len(files))
	}
	cfg, err := loadConfig(files[0])
	if err != nil {
		return failure(stderr, "lint", err)
	}
	findings, err := flowschema.Lint(cfg)
	if err != nil {
		return failure(stderr, "lint", err)
	}
	for _, f := range findings {
		fmt.Fprintln(stdout, f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(stderr, "fairslice lint: %d findings\n", len(findings))
		return exitFailure
	}
	return exitOK
}
