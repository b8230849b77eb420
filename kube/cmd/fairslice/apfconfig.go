package main

import (
	"fmt"
	"io"
	"os"

	"github.com/fairslice/fairslice/flowschema"
)

// Helpers shared by the APF configuration commands (classify, explain,
// validate, lint, limits).

// readInput reads a file, or standard input for "-".
func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// loadConfig decodes a FlowSchema/PriorityLevelConfiguration file, or
// returns the default bootstrap configuration for "".
func loadConfig(name string) (*flowschema.Config, error) {
	if name == "" {
		return flowschema.DefaultConfig(), nil
	}
	data, err := readInput(name)
	if err != nil {
		return nil, err
	}
	cfg, err := flowschema.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return cfg, nil
}

// usageError prints a command-line problem and returns exitUsage.
func usageError(stderr io.Writer, cmd, format string, args ...any) int {
	fmt.Fprintf(stderr, "fairslice %s: %s\nRun 'fairslice %s --help' for usage.\n", cmd, fmt.Sprintf(format, args...), cmd)
	return exitUsage
}

// failure prints an error and returns exitFailure.
func failure(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "fairslice %s: %v\n", cmd, err)
	return exitFailure
}
