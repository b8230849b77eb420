package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/fairslice/fairslice/flowschema"
)

const validateUsage = `Usage: fairslice validate FILE

Checks FlowSchemas and PriorityLevelConfigurations (Kubernetes YAML or JSON,
"-" for standard input) as the API server would on create, after applying
the v1 defaults, and prints every problem, one per line, with the object,
the field path and the bad value. Exit status 1 if there is any.

Flags:
`

// runValidate implements "fairslice validate".
func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), validateUsage); fs.PrintDefaults() }
	files, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if len(files) != 1 {
		return usageError(stderr, "validate", "expected one file, got %d", len(files))
	}
	cfg, err := loadConfig(files[0])
	if err != nil {
		return failure(stderr, "validate", err)
	}
	if err := flowschema.Validate(cfg); err != nil {
		var list flowschema.ErrorList
		if errors.As(err, &list) {
			for _, e := range list {
				fmt.Fprintln(stdout, e.Error())
			}
			fmt.Fprintf(stderr, "fairslice validate: %d problems\n", len(list))
			return exitFailure
		}
		return failure(stderr, "validate", err)
	}
	fmt.Fprintf(stdout, "valid: %d FlowSchemas, %d PriorityLevelConfigurations\n", len(cfg.FlowSchemas), len(cfg.PriorityLevels))
	return exitOK
}
