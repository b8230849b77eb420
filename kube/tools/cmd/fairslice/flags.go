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

// valuedFlags names fs's flags that take a value (all but boolean ones),
// for splitArgs.
func valuedFlags(fs *flag.FlagSet) map[string]bool {
	valued := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			valued[f.Name] = true
		}
	})
	return valued
}
