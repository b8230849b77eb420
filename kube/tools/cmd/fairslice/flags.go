package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// errNoUpstream is the answer to --upstream in a binary built without the
// upstream tag.
var errNoUpstream = errors.New("--upstream is not in this binary; build it with -tags upstream " +
	"(go install -tags upstream github.com/fairslice/fairslice/kube/tools/cmd/fairslice@latest)")

// refuseUpstream reports whether --upstream was asked of a binary built
// without it, after printing why; the command then exits with exitUsage.
func refuseUpstream(stderr io.Writer, cmd string, upstream bool) bool {
	if upstream && !upstreamBuilt {
		fmt.Fprintf(stderr, "fairslice %s: %v\n", cmd, errNoUpstream)
		return true
	}
	return false
}

// parseInterspersed parses fs's flags from args, allowing them before and
// after the positional arguments, which it returns; after "--" every
// argument is positional. It is how every command reads its command line.
// It reports whether the command should stop, and with which exit status
// (help, or a bad flag, which fs has already reported).
func parseInterspersed(fs *flag.FlagSet, args []string) (positional []string, stop bool, code int) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, true, exitOK
			}
			return nil, true, exitUsage
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(positional, rest...), false, exitOK
		}
		if len(rest) == 0 {
			return positional, false, exitOK
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
