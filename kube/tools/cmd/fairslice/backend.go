package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/internal/backendsim"
	"github.com/fairslice/fairslice/kube/internal/cliflag"
)

// backendFlags are simulate's flags for the backend-capacity model.
type backendFlags struct {
	slots    int
	at       cliflag.SlotChanges
	work     time.Duration
	users    int
	load     float64
	timeout  time.Duration
	duration time.Duration
	seed     uint64
	sweep    string
}

func (b *backendFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&b.slots, "backend-slots", 0, "simulate APF in front of a backend of `N` slots (see below)")
	fs.Var(&b.at, "backend-slots-at", "with --backend-slots: the capacity becomes N at `T=N` after the start (repeatable)")
	fs.DurationVar(&b.work, "work", 20*time.Millisecond, "with --backend-slots: how long a request holds a slot")
	fs.IntVar(&b.users, "users", 4, "with --backend-slots: the number of users")
	fs.Float64Var(&b.load, "load", 2, "with --backend-slots: offered load as a multiple of the initial capacity")
	fs.DurationVar(&b.timeout, "timeout", time.Second, "with --backend-slots: the client's timeout (goodput is what answers within it)")
	fs.DurationVar(&b.duration, "duration", 20*time.Second, "with --backend-slots: simulated time")
	fs.Uint64Var(&b.seed, "seed", 1, "with --backend-slots: the arrivals' seed")
	fs.StringVar(&b.sweep, "sweep", "", "with --backend-slots: also run static totals `N,N,...` and compare")
}

// backendResult is the -o json shape of simulate --backend-slots.
type backendResult struct {
	Slots             int                 `json:"slots"`
	Changes           []backendChange     `json:"changes"`
	ServerConcurrency string              `json:"serverConcurrency"`
	Offered           int                 `json:"offered"`
	Completed         int                 `json:"completed"`
	Good              int                 `json:"good"`
	Rejected          int                 `json:"rejected"`
	Goodput           float64             `json:"goodput"`
	LatencyP50        string              `json:"latencyP50"`
	LatencyP99        string              `json:"latencyP99"`
	Trace             []backendPoint      `json:"trace"`
	Sweep             []backendSweepPoint `json:"sweep,omitempty"`
}

type backendChange struct {
	At    string `json:"at"`
	Slots int    `json:"slots"`
}

type backendPoint struct {
	At        string `json:"at"`
	Total     int    `json:"total"`
	Limit     int    `json:"limit"`
	InBackend int    `json:"inBackend"`
	Slots     int    `json:"slots"`
}

type backendSweepPoint struct {
	Total      int     `json:"total"`
	Goodput    float64 `json:"goodput"`
	LatencyP99 string  `json:"latencyP99"`
}

// run implements simulate --backend-slots.
func (b *backendFlags) run(sc cliflag.Concurrency, out outputFormat, stdout, stderr io.Writer) int {
	if sc.N <= 0 && !sc.Auto {
		return usageError(stderr, "simulate", "--server-concurrency must be a positive number or auto")
	}
	static := sc.N
	if sc.Auto {
		static = 600 // the ceiling: upstream's default total
	}
	var totals []int
	if b.sweep != "" {
		for _, f := range strings.Split(b.sweep, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return usageError(stderr, "simulate", "--sweep %q: %q is not a positive number", b.sweep, f)
			}
			totals = append(totals, n)
		}
	}
	cfg := backendsim.Config{Slots: b.slots, Changes: b.at, Work: b.work, Users: b.users, Load: b.load,
		Timeout: b.timeout, Duration: b.duration, Static: static, Seed: b.seed}
	if sc.Auto {
		cfg.Adaptive = &apf.AdaptiveOptions{}
	}
	r, err := backendsim.Run(cfg)
	if err != nil {
		return failure(stderr, "simulate", err)
	}
	res := backendResult{Slots: b.slots, Changes: []backendChange{}, ServerConcurrency: sc.String(), Offered: r.Offered,
		Completed: r.Completed, Good: r.Good, Rejected: r.Rejected, Goodput: r.Goodput,
		LatencyP50: r.LatencyP50.String(), LatencyP99: r.LatencyP99.String()}
	for _, c := range b.at {
		res.Changes = append(res.Changes, backendChange{At: c.At.String(), Slots: c.Slots})
	}
	for _, p := range r.Trace {
		res.Trace = append(res.Trace, backendPoint{At: p.At.String(), Total: p.Total, Limit: p.Limit, InBackend: p.InBackend, Slots: p.Slots})
	}
	if len(totals) > 0 {
		sweep, _, err := backendsim.SweepStatic(cfg, totals)
		if err != nil {
			return failure(stderr, "simulate", err)
		}
		for i, s := range sweep {
			res.Sweep = append(res.Sweep, backendSweepPoint{Total: totals[i], Goodput: s.Goodput, LatencyP99: s.LatencyP99.String()})
		}
	}
	if err := out.write(stdout, res, res.writeText); err != nil {
		return failure(stderr, "simulate", err)
	}
	return exitOK
}

// writeText prints the run's totals, then the total each second.
func (r backendResult) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "backend slots\t%d", r.Slots)
	for _, c := range r.Changes {
		fmt.Fprintf(tw, ", %d at %s", c.Slots, c.At)
	}
	fmt.Fprintf(tw, "\nserver concurrency\t%s\n", r.ServerConcurrency)
	fmt.Fprintf(tw, "offered\t%d\ncompleted\t%d\ngood (within the timeout)\t%d\nrejected\t%d\n", r.Offered, r.Completed, r.Good, r.Rejected)
	fmt.Fprintf(tw, "goodput\t%.1f/s\nlatency p50\t%s\nlatency p99\t%s\n", r.Goodput, r.LatencyP50, r.LatencyP99)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(tw, "\nAT\tTOTAL\tLIMIT\tIN BACKEND\tSLOTS")
	for i, p := range r.Trace {
		if i%10 == 0 {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", p.At, p.Total, p.Limit, p.InBackend, p.Slots)
		}
	}
	if len(r.Sweep) > 0 {
		fmt.Fprintln(tw, "\nSTATIC TOTAL\tGOODPUT\tLATENCY P99\tTHIS RUN'S GOODPUT / IT")
		for _, s := range r.Sweep {
			ratio := 0.0
			if s.Goodput > 0 {
				ratio = r.Goodput / s.Goodput
			}
			fmt.Fprintf(tw, "%d\t%.1f/s\t%s\t%.3f\n", s.Total, s.Goodput, s.LatencyP99, ratio)
		}
	}
	return tw.Flush()
}
