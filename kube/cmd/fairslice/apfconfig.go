package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fairslice/fairslice/flowschema"
)

// Helpers shared by the APF configuration commands (classify, explain,
// validate, lint, limits).

// parseInterspersed parses fs's flags from args, allowing them before and
// after the positional arguments, which it returns. It reports whether the
// command should stop, and with which exit status (help, or a bad flag).
func parseInterspersed(fs *flag.FlagSet, args []string) (positional []string, stop bool, code int) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, true, exitOK
			}
			return nil, true, exitUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, false, exitOK
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

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
