package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/fairslice/fairslice/flowschema"
)

const validateUsage = `Usage: fairslice validate [-o text|json|yaml] (FILE... | --kubeconfig FILE | --cluster)

Checks FlowSchemas and PriorityLevelConfigurations (Kubernetes YAML or JSON,
"-" for standard input, Lists and kubectl dumps; other objects are
reported and skipped) as the API server would on create, after applying
the v1 defaults, and prints every problem, one per line, with the object,
the field path and the bad value. It warns about objects the API server
would revert to their bootstrap spec (mandatory ones, and suggested ones
with apf.kubernetes.io/autoupdate-spec: "true").

-o json (or yaml): {"valid": bool, "flowSchemas": N,
"priorityLevelConfigurations": N, "problems": [{"kind", "name", "field",
"type", "detail", "message"}], "reverted": ["..."]}

Exit status: 0 valid, 1 any problem or unreadable input, 2 bad command line.

Flags:
`

// validateResult is the -o json shape of validate.
type validateResult struct {
	Valid          bool              `json:"valid"`
	FlowSchemas    int               `json:"flowSchemas"`
	PriorityLevels int               `json:"priorityLevelConfigurations"`
	Problems       []validateProblem `json:"problems"`
	Reverted       []string          `json:"reverted"`
}

type validateProblem struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Field   string `json:"field"`
	Type    string `json:"type"`
	Detail  string `json:"detail"`
	Message string `json:"message"`
}

// runValidate implements "fairslice validate".
func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cluster clusterFlags
	cluster.register(fs)
	out := outputFlag(fs)
	fs.Usage = func() { fmt.Fprint(fs.Output(), validateUsage); fs.PrintDefaults() }
	files, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	cfg, code := configFromArgs(stderr, "validate", files, &cluster)
	if cfg == nil {
		return code
	}
	res := validateResult{FlowSchemas: len(cfg.FlowSchemas), PriorityLevels: len(cfg.PriorityLevels),
		Problems: []validateProblem{}, Reverted: revertedObjects(cfg)}
	if res.Reverted == nil {
		res.Reverted = []string{}
	}
	if err := flowschema.Validate(cfg); err != nil {
		var list flowschema.ErrorList
		if !errors.As(err, &list) {
			return failure(stderr, "validate", err)
		}
		for _, e := range list {
			res.Problems = append(res.Problems, validateProblem{Kind: e.Kind, Name: e.Name, Field: e.Field,
				Type: string(e.Type), Detail: e.Detail, Message: e.Error()})
		}
	}
	res.Valid = len(res.Problems) == 0
	text := func(w io.Writer) error {
		for _, p := range res.Problems {
			fmt.Fprintln(w, p.Message)
		}
		if res.Valid {
			fmt.Fprintf(w, "valid: %d FlowSchemas, %d PriorityLevelConfigurations\n", res.FlowSchemas, res.PriorityLevels)
		}
		return nil
	}
	for _, r := range res.Reverted {
		fmt.Fprintf(stderr, "fairslice validate: warning: %s\n", r)
	}
	if err := out.write(stdout, res, text); err != nil {
		return failure(stderr, "validate", err)
	}
	if !res.Valid {
		fmt.Fprintf(stderr, "fairslice validate: %s\n", plural(len(res.Problems), "problem"))
		return exitFailure
	}
	return exitOK
}

// configFromArgs reads the configuration of validate and lint: the files,
// or the cluster's.
func configFromArgs(stderr io.Writer, cmd string, files []string, cluster *clusterFlags) (*flowschema.Config, int) {
	var cfg *flowschema.Config
	var err error
	switch {
	case cluster.enabled() && len(files) > 0:
		return nil, usageError(stderr, cmd, "give files or --kubeconfig/--cluster, not both")
	case cluster.enabled():
		cfg, err = cluster.apfConfig()
	case len(files) == 0:
		return nil, usageError(stderr, cmd, "expected a file (\"-\" for standard input), got none")
	default:
		cfg, err = loadConfig(stderr, cmd, files...)
	}
	if err != nil {
		return nil, fail(stderr, cmd, err)
	}
	return cfg, exitOK
}

// plural returns "1 problem" or "n problems".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
