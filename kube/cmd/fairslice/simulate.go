package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fairslice/fairslice/fairqueue/scenario"
)

// stdin is where "simulate -" reads the scenario; tests replace it.
var stdin io.Reader = os.Stdin

const simulateUsage = `Usage:
  fairslice simulate [--upstream] [--summary] SCENARIO.json
  fairslice simulate [--upstream] [--summary] -        (read standard input)

Simulate replays a scenario file through a fair-queuing queue set (API
Priority and Fairness) on a simulated clock and prints, for each request in
input order, one JSON object:

  {"id":"A1","outcome":"dispatched","reason":"","queue":3,"dispatchedAt":"0s"}

outcome is "dispatched" or "rejected" ("waiting" if nothing could ever
dispatch the request and it has no wait limit, as with a concurrency limit
of 0); reason is "", "queue-full", "concurrency-limit" or "time-out";
queue is the queue the request entered (at the moment it entered), or -1;
dispatchedAt is the dispatch time since time 0, or "".

The file:

  {"config": {"queues": 8, "handSize": 2, "queueLengthLimit": 10,
              "concurrencyLimit": 1},
   "requests": [{"id": "A1", "arrival": "0s", "hash": 1001,
                 "initialSeats": 1, "finalSeats": 0,
                 "additionalLatency": "0s", "duration": "1s",
                 "waitLimit": "0s"}],
   "reconfigurations": [{"at": "5s", "config": {...}}]}

Durations are Go duration strings; hash is an unsigned 64-bit integer, or a
string holding one in decimal or 0x-hexadecimal as "fairslice deal" prints
it ("0x00000000deadbeef");
duration is the execution time once dispatched; waitLimit 0 means none;
queues 0 selects no queuing and -1 the exempt mode. initialSeats (default
1), finalSeats, additionalLatency, waitLimit and reconfigurations are
optional. Events run in time order; at one instant: completions and seat
releases (in the order scheduled), then wait-limit expiries, then
reconfigurations, then arrivals (each in file order).

A config may set any of fairqueue's three fixes of upstream bugs to true:
"fixStaleQueueRemoval" (a request lingering in an already removed queue
removes no other queue at its release, so no waiting request is stranded),
"fixZeroLimitAdmission" (a concurrency limit of 0 admits nothing) and
"clampFinalSeatsWithoutQueues" (the final-seats clamp applies without
queues too). --upstream rejects them, as Kubernetes has no such options.

Without --upstream the scenario runs through fairslice's fairqueue package
and a per-flow summary (throughput, wait percentiles, Jain's fairness
index) goes to standard error. --upstream runs Kubernetes' own QueueSet
(k8s.io/apiserver v0.37.2) under the same rules; upstream panics on some
scenarios that shrink the number of queues, which is reported as an error.
--summary prints the summary to standard output after the results instead.

Exit status: 0 success or help, 1 unreadable or invalid scenario (every
problem is listed, naming the request and field), 2 bad command line.

Flags:
`

// runSimulate implements "fairslice simulate".
func runSimulate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	upstream := fs.Bool("upstream", false, "run Kubernetes' own QueueSet instead of fairslice's")
	summary := fs.Bool("summary", false, "print the per-flow summary to standard output after the results")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), simulateUsage)
		fs.PrintDefaults()
	}
	// Accept flags after the file name too.
	var flags, files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			files = append(files, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = append(flags, a)
		} else {
			files = append(files, a)
		}
	}
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if len(files) != 1 {
		msg := "missing scenario file"
		if len(files) > 1 {
			msg = fmt.Sprintf("expected one scenario file, got %d", len(files))
		}
		fmt.Fprintf(stderr, "fairslice simulate: %s\nRun 'fairslice simulate --help' for usage.\n", msg)
		return exitUsage
	}

	if refuseUpstream(stderr, "simulate", *upstream) {
		return exitUsage
	}
	var in io.Reader = stdin
	name := files[0]
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "fairslice simulate: %v\n", err)
			return exitFailure
		}
		defer f.Close()
		in = f
	} else {
		name = "standard input"
	}
	s, err := scenario.Parse(in)
	if err != nil {
		fmt.Fprintf(stderr, "fairslice simulate: %s:\n%v\n", name, err)
		return exitFailure
	}
	var engine scenario.Engine = scenario.NewEngine()
	if *upstream {
		engine = upstreamQueueSet()
	}
	results, err := runEngine(s, engine)
	if err != nil {
		fmt.Fprintf(stderr, "fairslice simulate: %s: %v\n", name, err)
		return exitFailure
	}
	if err := scenario.WriteResults(stdout, results); err != nil {
		fmt.Fprintf(stderr, "fairslice simulate: %v\n", err)
		return exitFailure
	}
	switch {
	case *summary:
		err = scenario.Summarize(s, results).WriteText(stdout)
	case !*upstream:
		err = scenario.Summarize(s, results).WriteText(stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fairslice simulate: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// runEngine runs s through e, turning a panic into an error: upstream's
// QueueSet panics on some legal scenarios (see kube/compare/fairqueue).
func runEngine(s *scenario.Scenario, e scenario.Engine) (results []scenario.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the queue set panicked: %v", p)
		}
	}()
	return scenario.Run(s, e)
}
