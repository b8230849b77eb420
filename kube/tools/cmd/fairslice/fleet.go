package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/internal/fleetsim"
	"github.com/fairslice/fairslice/kube/tools/pictures"
)

const fleetUsage = `Usage:
  fairslice fleet --replicas N [--spread K] [--pinned M] [--pinned-to R] [--light L]
                  [--balancer pinned|round-robin|least-inflight] [--duration D] [--seed S]
                  [--goaway off|random|targeted] [--goaway-chance P]
                  [--coordinate=false|true] [--caps-wait] [--workers W]
  fairslice fleet --matrix [--duration D] [--seed S] [--caps-wait] [--workers W]
                  [-o text|json|yaml] [--svg FILE] [--html FILE]

Fleet simulates N replicas of a server, each running API Priority and
Fairness on its own (package apf, the bootstrap configuration, a server
concurrency limit of 50 seats) on one simulated clock behind a load
balancer, and prints each flow's fleet-wide share of the seat-seconds of
the global-default priority level against its max-min fair share.

The flows, all in global-default, each a user sending requests of one seat
that execute for one second:
  K "spread" flows (default 1): a tenant of 2N clients whose requests
    reach every replica;
  M "pinned" flows (default N): each one client on one long-lived
    connection, client i on replica i mod N, or all on replica R with
    --pinned-to R;
  L "light" flows (default 0): N clients each, asking for less than their
    fair share.
Spread and pinned flows each ask for more seats than the whole fleet has
(1.2 × 50 × N seats).

--balancer places the requests of clients that are not pinned: each
client keeps its connection (pinned), each request to the next replica
(round-robin, the default), or to the one with the fewest requests in
flight (least-inflight). --goaway closes connections, making the client
reconnect through the balancer: never (off), per request with
a chance of --goaway-chance P (default 0.001, kube-apiserver's
suggestion; at most 0.02, its bound) (random), or, at most once a second
per flow, those of the flows that wait or are refused on their replica
while they hold under their fleet fair share and some replica has none of
them, or while another replica is less than half as pressed (targeted;
its replicas exchange summaries every second).
--coordinate=true has the replicas exchange, every 10 s, their flows'
seats and demand (package apf/fleet, through an in-memory store) and cap
each heavy flow on each replica at its fleet-wide fair share minus what
the others give it; a request over its cap is refused, or with
--caps-wait waits (per flow, in order, outside the queues) until its
flow's seats let it in. The first 20 s (a third of a shorter run) are run but
not measured, coordinated or not: the replicas' first adjustments and
exchanges.

A flow's fair share is its part of the max-min fair allocation of the
replicas' seats (their mean current limits, borrowing included) among the
flows' demands, where a flow whose connections never move (GOAWAY off) can
be served only on the replicas they are on. Jain's index is over
share/fairShare; utilisationSpread is the highest replica seat utilisation
over the lowest (null if some replica executed nothing);
rejectedWhileIdle counts requests rejected while at least 30% of the
fleet's seats (the replicas' current limits) executed nothing;
rejectedWhileServersIdle those rejected while at least 30% of the
fleet's server seats for the level executed nothing, a replica's server
seats being the most global-default may hold there under upstream's
borrowing (33 of 50: its nominal limit plus what the other levels may
lend), which coordination does not move. goodput is the seat-seconds
executed per second of the measured time; goaways the connections
closed. The same flags give the same numbers.

-o json (or yaml): {"replicas", "balancer", "coordinate", "goaway",
"flows": [{"name", "kind", "share", "fairShare"}], "jain",
"utilisationSpread", "rejected", "rejectedWhileIdle",
"rejectedWhileServersIdle", "goodput", "goaways"}, kind being
"spread", "pinned" or "light" and shares fractions of the fleet's
seat-seconds. --svg FILE and --html FILE also draw each flow's share
against its fair share, the run without coordination next to the one with.

--matrix runs instead the steering matrix: ten scenarios (3 to 5
replicas, 1 to 4 pinned flows all on replica 0, 0 to 8 light flows, with
and without a spread flow, each its own seed, the balancer keeping each
client's connection), each uncoordinated and coordinated, under GOAWAY
off, random at 0.001 and at 0.02, and targeted; it prints per row each
one's rejectedWhileServersIdle, Jain, goodput and goaways, which of the
bars targeted meets (R: rejections while the servers idle within 10%
(+5) of the better random setting's; J: Jain >= 0.95; G: goodput >= 97%
of the best; A: fewer GOAWAYs than random 0.02), and the count per mode.
--seed S moves every cell to its seed plus S-1 (S defaults to 1: the
cells' own seeds), to judge the steering on seeds it was not tuned on.

--workers W makes every client of the spread and pinned flows a closed
loop of W workers, as a client with a pool of workers on one connection
is: a worker sends its next request when the last is answered (20 ms
after a rejection); the flow's demand is then W seats per client. By
default (0) clients send at their rate whatever the answers, and a moved
client's requests queued where it was stay there.

Exit status: 0 success or help, 2 bad command line.

Flags:
`

// The fleet command's scenario constants.
const (
	fleetServerSeats = 50          // each replica's server concurrency limit
	fleetExecution   = time.Second // every request's execution
	fleetOverload    = 1.2         // a heavy flow's demand over the fleet's server seats
	fleetWarmup      = 20 * time.Second
)

// fleetFlags are the fleet command's settings.
type fleetFlags struct {
	replicas, spread, pinned, pinnedTo, light int
	balancer, goaway                          string
	duration                                  time.Duration
	seed                                      uint64
	coordinate                                bool
	goawayChance                              float64
	capsWait                                  bool
	matrix                                    bool
	workers                                   int
}

func (f *fleetFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.replicas, "replicas", 3, "replicas `N` in the fleet, 1 to 16")
	fs.IntVar(&f.spread, "spread", 1, "heavy flows `K` spread over every replica")
	fs.IntVar(&f.pinned, "pinned", -1, "heavy flows `M` each pinned to one replica (default N)")
	fs.IntVar(&f.pinnedTo, "pinned-to", -1, "put every pinned flow on replica `R` (default: flow i on replica i mod N)")
	fs.IntVar(&f.light, "light", 0, "light flows `L` spread over every replica")
	fs.StringVar(&f.balancer, "balancer", string(fleetsim.BalancerRoundRobin), "load balancer: pinned, round-robin or least-inflight")
	fs.DurationVar(&f.duration, "duration", time.Minute, "simulated `time`")
	fs.Uint64Var(&f.seed, "seed", 1, "`seed` of the arrivals and GOAWAY draws")
	fs.StringVar(&f.goaway, "goaway", string(fleetsim.GoAwayOff), "GOAWAY: off, random or targeted")
	fs.Float64Var(&f.goawayChance, "goaway-chance", fleetsim.UpstreamGoAwayChance, "chance `P` per request of --goaway random, more than 0 and at most 0.02")
	fs.BoolVar(&f.capsWait, "caps-wait", false, "with --coordinate=true, a flow's requests over its cap wait instead of being refused")
	fs.BoolVar(&f.matrix, "matrix", false, "run the steering matrix instead (see above); --duration, --seed, --workers and --caps-wait apply")
	fs.IntVar(&f.workers, "workers", 0, "make each client of the spread and pinned flows a closed loop of `W` workers (0: open loop)")
	fs.BoolVar(&f.coordinate, "coordinate", false, "replicas exchange demand and cap heavy flows at their fleet-wide fair share")
}

// check reports the first bad flag value.
func (f *fleetFlags) check() error {
	switch {
	case f.replicas < 1 || f.replicas > fleet.MaxFairShareReplicas:
		return fmt.Errorf("--replicas %d: want 1 to %d", f.replicas, fleet.MaxFairShareReplicas)
	case f.spread < 0 || f.light < 0 || f.pinned < -1:
		return fmt.Errorf("--spread %d, --pinned %d, --light %d: want counts of 0 or more", f.spread, f.pinned, f.light)
	case f.pinnedTo < -1 || f.pinnedTo >= f.replicas:
		return fmt.Errorf("--pinned-to %d: want a replica, 0 to %d", f.pinnedTo, f.replicas-1)
	case f.duration <= 0:
		return fmt.Errorf("--duration %v: want a positive duration", f.duration)
	case f.workers < 0:
		return fmt.Errorf("--workers %d: want 0 or more", f.workers)
	case !(f.goawayChance > 0 && f.goawayChance <= 0.02):
		return fmt.Errorf("--goaway-chance %v: want more than 0 and at most 0.02", f.goawayChance)
	}
	switch fleetsim.Balancer(f.balancer) {
	case fleetsim.BalancerPinned, fleetsim.BalancerRoundRobin, fleetsim.BalancerLeastInflight:
	default:
		return fmt.Errorf("--balancer %q: want pinned, round-robin or least-inflight", f.balancer)
	}
	switch fleetsim.GoAwayMode(f.goaway) {
	case fleetsim.GoAwayOff, fleetsim.GoAwayRandom, fleetsim.GoAwayTargeted:
	default:
		return fmt.Errorf("--goaway %q: want off, random or targeted", f.goaway)
	}
	if f.spread+f.pinnedFlows()+f.light == 0 {
		return fmt.Errorf("no flows: --spread, --pinned and --light are all 0")
	}
	return nil
}

func (f *fleetFlags) pinnedFlows() int {
	if f.pinned < 0 {
		return f.replicas
	}
	return f.pinned
}

// config returns the simulation the flags describe and each flow's kind.
func (f *fleetFlags) config() (fleetsim.Config, []string) {
	n := f.replicas
	heavy := fleetOverload * fleetServerSeats * float64(n) / fleetExecution.Seconds()
	flows := f.spread + f.pinnedFlows() + f.light
	// A quarter of an even split of half the fleet's server seats is
	// below any flow's fair share: global-default gets about half.
	light := fleetServerSeats * float64(n) / 2 / 4 / float64(flows) / fleetExecution.Seconds()
	cfg := fleetsim.Config{
		Replicas: n, ServerConcurrencyLimit: fleetServerSeats, Duration: f.duration, Seed: f.seed,
		Warmup: min(fleetWarmup, f.duration/3), Coordinate: f.coordinate, CapsWait: f.capsWait,
		Balancer: fleetsim.Balancer(f.balancer), GoAway: fleetsim.GoAway{Mode: fleetsim.GoAwayMode(f.goaway), Chance: f.goawayChance},
	}
	var kinds []string
	add := func(kind string, fl fleetsim.Flow) {
		fl.Name, fl.Execution = fmt.Sprintf("%s-%d", kind, countKind(kinds, kind)), fleetExecution
		cfg.Flows = append(cfg.Flows, fl)
		kinds = append(kinds, kind)
	}
	for range f.spread {
		add("spread", fleetsim.Flow{Rate: heavy, Clients: 2 * n, Workers: f.workers})
	}
	for i := range f.pinnedFlows() {
		r := i % n
		if f.pinnedTo >= 0 {
			r = f.pinnedTo
		}
		add("pinned", fleetsim.Flow{Rate: heavy, Pinned: true, Replica: r, Workers: f.workers})
	}
	for range f.light {
		add("light", fleetsim.Flow{Rate: light, Clients: n})
	}
	return cfg, kinds
}

func countKind(kinds []string, kind string) int {
	n := 0
	for _, k := range kinds {
		if k == kind {
			n++
		}
	}
	return n
}

// runFleet implements "fairslice fleet".
func runFleet(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ff fleetFlags
	ff.register(fs)
	out := outputFlag(fs)
	pic := addPictureFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), fleetUsage)
		fs.PrintDefaults()
	}
	rest, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if len(rest) != 0 {
		return usageError(stderr, "fleet", "unexpected argument %q", rest[0])
	}
	if err := ff.check(); err != nil {
		return usageError(stderr, "fleet", "%v", err)
	}
	if ff.matrix {
		rep, err := ff.runMatrix(steeringMatrix)
		if err != nil {
			return failure(stderr, "fleet", err)
		}
		if err := out.write(stdout, rep, rep.writeText); err != nil {
			return failure(stderr, "fleet", err)
		}
		return exitOK
	}
	report, err := ff.run()
	if err != nil {
		return failure(stderr, "fleet", err)
	}
	if err := out.write(stdout, report, report.writeText); err != nil {
		return failure(stderr, "fleet", err)
	}
	return pic.drawFleet(ff, report, stderr)
}

// run simulates the fleet the flags describe.
func (f fleetFlags) run() (fleetReport, error) {
	cfg, kinds := f.config()
	res, err := fleetsim.Run(cfg)
	if err != nil {
		return fleetReport{}, err
	}
	return fleetReportOf(&f, kinds, res), nil
}

// fleetReport is the -o json shape of fleet; its flows are the
// picture's.
type fleetReport struct {
	Replicas          int                  `json:"replicas"`
	Balancer          string               `json:"balancer"`
	Coordinate        bool                 `json:"coordinate"`
	GoAway            string               `json:"goaway"`
	Flows             []pictures.FleetFlow `json:"flows"`
	Jain              float64              `json:"jain"`
	UtilisationSpread ratio                `json:"utilisationSpread"`
	Rejected          int                  `json:"rejected"`
	RejectedWhileIdle int                  `json:"rejectedWhileIdle"`
	// RejectedWhileServersIdle, Goodput and GoAways are fleetsim.Result's.
	RejectedWhileServersIdle int     `json:"rejectedWhileServersIdle"`
	Goodput                  float64 `json:"goodput"`
	GoAways                  int     `json:"goaways"`
}

// ratio is a number that may be +Inf, which JSON writes as null.
type ratio float64

// MarshalJSON implements json.Marshaler.
func (r ratio) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(r), 0) || math.IsNaN(float64(r)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(r))
}

func fleetReportOf(ff *fleetFlags, kinds []string, res *fleetsim.Result) fleetReport {
	r := fleetReport{
		Replicas: ff.replicas, Balancer: ff.balancer, Coordinate: ff.coordinate, GoAway: ff.goaway,
		Jain: res.Jain, UtilisationSpread: ratio(res.UtilisationSpread), Rejected: res.Rejected, RejectedWhileIdle: res.RejectedWhileIdle,
		RejectedWhileServersIdle: res.RejectedWhileServersIdle, Goodput: res.Goodput, GoAways: res.GoAways,
	}
	for i, f := range res.Flows {
		r.Flows = append(r.Flows, pictures.FleetFlow{Name: f.Name, Kind: kinds[i], Share: f.Share, FairShare: f.FairShare})
	}
	return r
}

// writeText prints the report as a table of flows and a summary line.
func (r fleetReport) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "FLOW\tKIND\tSHARE\tFAIR SHARE\tSHARE/FAIR")
	for _, f := range r.Flows {
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f\t%.2f\n", f.Name, f.Kind, f.Share, f.FairShare, f.Share/f.FairShare)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d replicas, balancer %s, goaway %s, coordinate %t: Jain %.4f, utilisation spread %.3f, %d rejected, %d while the fleet had >= 30%% seats idle\n",
		r.Replicas, r.Balancer, r.GoAway, r.Coordinate, r.Jain, float64(r.UtilisationSpread), r.Rejected, r.RejectedWhileIdle)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "goodput %.2f seats, %d rejected while the servers had >= 30%% seats idle, %d GOAWAYs\n",
		r.Goodput, r.RejectedWhileServersIdle, r.GoAways)
	return err
}
