// Command fairslice is a command-line front end to fairslice: shuffle
// sharding, fair queuing and FlowSchema classification as in Kubernetes API
// Priority and Fairness (k8s.io/apiserver v0.37.2), and EndpointSlice
// reconciliation and topology hints as in k8s.io/endpointslice v0.37.2.
// Commands with --upstream run Kubernetes' own code on the same input.
//
// Usage:
//
//	fairslice <command> [flags]
//
// Commands:
//
//	deal        print the hand (queue indexes) dealt for a hash or a flow
//	odds        print the probability that a mouse flow is squished by elephants
//	simulate    run a fair-queuing simulation
//	classify    classify requests with APF FlowSchemas (or upstream's controller)
//	explain     explain how one request is classified
//	validate    check FlowSchemas and priority levels as the API server does
//	lint        find shadowed FlowSchemas, dangling references, unreachable levels
//	limits      print the concurrency limits of the priority levels
//	reconcile   plan EndpointSlice writes for a Service (or run upstream's reconciler)
//	propagation bytes written and sent in a rolling update: Endpoints vs EndpointSlices
//	sweep       writes, bytes and objects per max-endpoints-per-slice under churn
//	hints       print the topology hints a Service's EndpointSlices get
//	route       print the endpoints a node's kube-proxy uses for a Service
//	diff        compare two APF configurations: objects, limits, requests that move
//	fleet       simulate APF on every replica of a fleet: each flow's share against its fair share
//	help        print help for a command
//
// Run "fairslice <command> --help" for a command's flags. Help goes to
// standard error and exits 0. Exit status 2 means a bad command line
// (unknown command or flag, a malformed or missing value); 1 means findings
// (validate, lint, diff) or a well-formed request that could not be
// carried out: unreadable or invalid input, or a deck and hand that the
// dealer rejects. Every command takes -o text|json|yaml.
package main

import (
	"fmt"
	"io"
	"os"
)

// Exit statuses shared by every subcommand.
const (
	exitOK      = 0
	exitFailure = 1 // a well-formed request that failed
	exitUsage   = 2 // a bad command line
)

// command is one subcommand: its name, a one-line summary for the usage
// text, and its entry point. run receives the arguments after the command
// name and returns the process exit status.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order the usage text shows them.
var commands = []command{
	{"deal", "print the hand (queue indexes) dealt for a hash or a flow", runDeal},
	{"odds", "print the probability that a mouse flow is squished by elephants", runOdds},
	{"simulate", "run a fair-queuing simulation", runSimulate},
	{"classify", "classify requests with APF FlowSchemas (or upstream's controller)", runClassify},
	{"explain", "explain how one request is classified", runExplain},
	{"validate", "check FlowSchemas and priority levels as the API server does", runValidate},
	{"lint", "find shadowed FlowSchemas, dangling references, unreachable levels", runLint},
	{"limits", "print the concurrency limits of the priority levels", runLimits},
	{"reconcile", "plan EndpointSlice writes for a Service (or run upstream's reconciler)", runReconcile},
	{"propagation", "bytes written and sent in a rolling update: Endpoints vs EndpointSlices", runPropagation},
	{"sweep", "writes, bytes and objects per max-endpoints-per-slice under churn", runSweep},
	{"hints", "print the topology hints a Service's EndpointSlices get", runHints},
	{"route", "print the endpoints a node's kube-proxy uses for a Service", runRoute},
	{"diff", "compare two APF configurations: objects, limits, requests that move", runDiff},
	{"fleet", "simulate APF on every replica of a fleet: each flow's share against its fair share", runFleet},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args[0] to its subcommand and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		usage(stderr)
		return exitOK
	case "help":
		if len(rest) == 0 || rest[0] == "-h" || rest[0] == "-help" || rest[0] == "--help" {
			usage(stderr)
			return exitOK
		}
		if c, ok := lookup(rest[0]); ok {
			return c.run([]string{"--help"}, stdout, stderr)
		}
		fmt.Fprintf(stderr, "fairslice help: unknown command %q\n", rest[0])
		usage(stderr)
		return exitUsage
	}
	if c, ok := lookup(name); ok {
		return c.run(rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "fairslice: unknown command %q\n", name)
	usage(stderr)
	return exitUsage
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func usage(w io.Writer) {
	fmt.Fprint(w, `fairslice: Kubernetes API Priority and Fairness (shuffle sharding, fair
queuing, FlowSchemas) and EndpointSlice reconciliation and topology hints,
behaviour-compatible with k8s.io/apiserver and k8s.io/endpointslice v0.37.2.

Usage:
  fairslice <command> [flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `  help        print help for a command

Run "fairslice <command> --help" for a command's flags.
Every command reads files or "-" (standard input), YAML or JSON, Lists and
kubectl dumps, and prints text, or one JSON or YAML document with -o json or
-o yaml (the shape is in the command's --help). Commands that use an APF
configuration or a Service read it from a cluster with --kubeconfig FILE
or --cluster (read-only). --upstream needs a binary built with -tags
upstream.

Exit status, the same for every command: 0 success or help, 1 findings
(validate, lint, diff) or unreadable or invalid input, 2 bad command line.
`)
}
