package main

import (
	"errors"
	"flag"
)

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
