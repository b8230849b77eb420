package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fairslice/fairslice/fairqueue/scenario"
)

// stdin is where "simulate -" reads the scenario; tests replace it.
var stdin io.Reader = os.Stdin

const simulateUsage = `Usage:
  fairslice simulate [--upstream] [--summary] [-o text|json|yaml] SCENARIO.json
  fairslice simulate [--upstream] [--summary] -        (read standard input)
  fairslice simulate --audit-log AUDIT.log [--config FILE | --kubeconfig FILE] [--server-concurrency N] [-o text|json|yaml]
  fairslice simulate --backend-slots N [--backend-slots-at T=N]... [--server-concurrency N|auto] [--sweep N,N,...] [-o text|json|yaml]

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

-o json (or yaml): {"results": [{"id", "outcome", "reason", "queue",
"dispatchedAt"}], "summary": {"span", "fairness", "flows": [{"hash",
"requests", "dispatched", "rejected", "timedOut", "waiting", "seatSeconds",
"throughput", "waitP50", "waitP90", "waitP99"}]}} (durations as Go duration
strings, hash as 0x and 16 hexadecimal digits).

--audit-log replays the requests of a kube-apiserver audit log
(audit.k8s.io/v1 Events, one JSON object per line, as the log backend
writes them; any level from Metadata up) through API Priority and
Fairness under the configuration (--config, --kubeconfig, or the bootstrap
one) and a server concurrency limit N (default 600), and predicts waits
and 429s per priority level and per flow, top flows first. The model,
stated: each request arrives at its requestReceivedTimestamp and executes
for stageTimestamp − requestReceivedTimestamp of its ResponseComplete (or
Panic) event, which includes any time it waited in the real server's
queues; a request without one (a log cut short) executes for
--default-duration; watches hold their seat only until initialized, taken
as 0; every request takes one seat (upstream's work estimator charges
lists more); each level's concurrency limit is its limit after a
borrowing adjustment with no demand (as "fairslice limits" CURRENT) and
does not change during the replay; the wait limit is 15 s, upstream's for
the default 60 s request timeout; exempt levels are not limited.
-o json: {"requests", "skipped", "levels": [STATS], "flows": [STATS]}, with
STATS {"priorityLevel", "flowSchema" and "distinguisher" (flows only),
"concurrencyLimit" (levels only), "requests", "dispatched", "rejected",
"timedOut", "waitP50", "waitP99", "waitMax"}.
--svg FILE and --html FILE also draw the run: per flow, requests waiting
and executing over time (rejections and dispatches marked), the wait-time
CDF and the outcomes; --compare runs the other engine too and draws both.
With --audit-log the picture is of the first level the report lists that
has a concurrency limit (the one with the most rejections and time-outs).

--backend-slots N simulates API Priority and Fairness (package apf, a
real Controller on a simulated clock) in front of a backend of N slots:
each admitted request holds one slot for --work, queueing inside the
handler when none is free (APF cannot see that queue, only the longer
executions); --backend-slots-at T=N changes the capacity at T. --users
users in one priority level send Poisson arrivals at --load times the
initial capacity; a request waits in APF's queues at most --timeout/4 and
is goodput if answered within --timeout. --server-concurrency N is a
static total; auto is the adaptive total (apf.Options.Adaptive, ceiling
600). It prints the counts, goodput (good responses per second), latency
p50/p99 and the total over time; --sweep also runs static totals and
compares. -o json: {"slots", "changes": [{"at", "slots"}],
"serverConcurrency", "offered", "completed", "good", "rejected",
"goodput", "latencyP50", "latencyP99", "trace": [{"at", "total",
"limit", "inBackend", "slots"}] (every 100 ms), "sweep": [{"total",
"goodput", "latencyP99"}]}. The run is deterministic (--seed).

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
	var rf replayFlags
	rf.register(fs)
	var bf backendFlags
	bf.register(fs)
	out := outputFlag(fs)
	pic := addSimulatePictureFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), simulateUsage)
		fs.PrintDefaults()
	}
	files, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if code := pic.check(stderr); code != exitOK {
		return code
	}
	if bf.slots != 0 {
		if len(files) > 0 || *upstream || *summary || rf.auditLog != "" {
			return usageError(stderr, "simulate", "--backend-slots takes no scenario file, --audit-log, --upstream or --summary")
		}
		return bf.run(rf.serverConcurrency, *out, stdout, stderr)
	}
	if rf.auditLog != "" {
		if len(files) > 0 || *upstream || *summary {
			return usageError(stderr, "simulate", "--audit-log takes no scenario file, --upstream or --summary")
		}
		return rf.run(*out, pic, stdout, stderr)
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
	name := inputName(files[0])
	s, code := loadSimulation(files[0], stderr)
	if s == nil {
		return code
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
	if code := writeSimulation(stdout, stderr, *out, s, results, *summary, *upstream); code != exitOK {
		return code
	}
	return pic.draw(name, s, *upstream, results, stderr)
}

// loadSimulation reads and parses the scenario file of simulate.
func loadSimulation(file string, stderr io.Writer) (*scenario.Scenario, int) {
	name := inputName(file)
	data, err := readInput(file)
	if err != nil {
		fmt.Fprintf(stderr, "fairslice simulate: %v\n", err)
		return nil, exitFailure
	}
	if len(bytes.TrimSpace(data)) == 0 {
		fmt.Fprintf(stderr, "fairslice simulate: %s: no scenario (the input is empty)\n", name)
		return nil, exitFailure
	}
	s, err := scenario.Parse(bytes.NewReader(data))
	if err != nil {
		fmt.Fprintf(stderr, "fairslice simulate: %s:\n%v\n", name, err)
		return nil, exitFailure
	}
	return s, exitOK
}

// writeSimulation prints the results: with -o json or yaml the results and
// the summary as one document; as text the results, then the per-flow
// summary on stdout with --summary, on stderr without --upstream.
func writeSimulation(stdout, stderr io.Writer, out outputFormat, s *scenario.Scenario, results []scenario.Result, summary, upstream bool) int {
	var err error
	switch {
	case out != outputText:
		err = out.write(stdout, simulateResultOf(results, scenario.Summarize(s, results)), nil)
	default:
		err = scenario.WriteResults(stdout, results)
		switch {
		case err != nil:
		case summary:
			err = scenario.Summarize(s, results).WriteText(stdout)
		case !upstream:
			err = scenario.Summarize(s, results).WriteText(stderr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "fairslice simulate: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// runEngine runs s through e, turning a panic into an error: upstream's
// QueueSet panics on some legal scenarios (see kube/verify/compare/fairqueue).
func runEngine(s *scenario.Scenario, e scenario.Engine) (results []scenario.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the queue set panicked: %v", p)
		}
	}()
	return scenario.Run(s, e)
}

// simulateResult is the -o json shape of simulate.
type simulateResult struct {
	Results []scenario.Result `json:"results"`
	Summary simulateSummary   `json:"summary"`
}

type simulateSummary struct {
	Span     string          `json:"span"`
	Fairness float64         `json:"fairness"`
	Flows    []simulatedFlow `json:"flows"`
}

type simulatedFlow struct {
	Hash        string  `json:"hash"`
	Requests    int     `json:"requests"`
	Dispatched  int     `json:"dispatched"`
	Rejected    int     `json:"rejected"`
	TimedOut    int     `json:"timedOut"`
	Waiting     int     `json:"waiting"`
	SeatSeconds float64 `json:"seatSeconds"`
	Throughput  float64 `json:"throughput"`
	WaitP50     string  `json:"waitP50"`
	WaitP90     string  `json:"waitP90"`
	WaitP99     string  `json:"waitP99"`
}

func simulateResultOf(results []scenario.Result, sum scenario.Summary) simulateResult {
	res := simulateResult{Results: results, Summary: simulateSummary{Span: sum.Span.String(), Fairness: sum.Fairness, Flows: []simulatedFlow{}}}
	if res.Results == nil {
		res.Results = []scenario.Result{}
	}
	for _, f := range sum.Flows {
		res.Summary.Flows = append(res.Summary.Flows, simulatedFlow{Hash: fmt.Sprintf("0x%016x", f.Hash), Requests: f.Requests,
			Dispatched: f.Dispatched, Rejected: f.Rejected, TimedOut: f.TimedOut, Waiting: f.Waiting, SeatSeconds: f.SeatSeconds,
			Throughput: f.Throughput, WaitP50: f.WaitP50.String(), WaitP90: f.WaitP90.String(), WaitP99: f.WaitP99.String()})
	}
	return res
}
