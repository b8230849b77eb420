package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

const limitsUsage = `Usage: fairslice limits --server-concurrency N [--config FILE | --kubeconfig FILE] [-o text|json|yaml]

Prints the concurrency limits (in seats) of every priority level for a
server concurrency limit N (--max-requests-inflight plus
--max-mutating-requests-inflight; 600 by default in kube-apiserver):

  NOMINAL   ceil(N · shares / Σ shares)
  LENDABLE  round(NOMINAL · lendablePercent / 100)
  BORROW    round(NOMINAL · borrowingLimitPercent / 100), or N if unset
  MIN, MAX  NOMINAL − LENDABLE, NOMINAL + BORROW
  SEATS     the most seats one request may take (queuing levels)
  CURRENT   the limit after an adjustment with no demand (as at start-up)

FILE is as for "fairslice classify" (default: the bootstrap
configuration); missing mandatory levels are added. A configuration that
"fairslice validate" refuses is refused unless --allow-invalid; levels the
API server would then ignore are listed on standard error.

-o json (or yaml): {"serverConcurrency": N, "levels": [{"name", "type"
("exempt", "queue" or "reject"), "shares", "nominal", "lendable", "borrow",
"min", "max", "seats" (0 for non-queuing levels), "current"}],
"totalNominal": N, "totalCurrent": N}

Exit status: 0 success, 1 unreadable or invalid configuration, 2 bad
command line.

Flags:
`

// runLimits implements "fairslice limits".
func runLimits(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice limits", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf configFlags
	cf.register(fs)
	out := outputFlag(fs)
	server := fs.Int("server-concurrency", 0, "the server's concurrency limit `N` (required)")
	fs.Usage = func() { fmt.Fprint(fs.Output(), limitsUsage); fs.PrintDefaults() }
	rest, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	if len(rest) > 0 {
		return usageError(stderr, "limits", "unexpected argument %q", rest[0])
	}
	if *server <= 0 {
		return usageError(stderr, "limits", "--server-concurrency must be a positive number")
	}
	cfg, err := cf.load(stderr, "limits")
	if err != nil {
		return fail(stderr, "limits", err)
	}
	c, err := flowschema.Compile(cfg)
	if err != nil {
		return failure(stderr, "limits", err)
	}
	for _, l := range c.IgnoredLevels() {
		fmt.Fprintf(stderr, "fairslice limits: warning: the API server ignores PriorityLevelConfiguration %q: %s\n", l.Name, l.Reason)
	}
	limits, err := seats.ComputeLimits(*server, c.PriorityLevels())
	if err != nil {
		return failure(stderr, "limits", err)
	}
	current := currentLimits(limits, *server)
	res := limitsResult{ServerConcurrency: *server, Levels: []levelLimits{}}
	for i, l := range limits {
		typ := "reject"
		switch {
		case l.Exempt:
			typ = "exempt"
		case l.Queuing:
			typ = "queue"
		}
		seats := 0
		if l.Queuing {
			seats = l.MaxSeats
		}
		res.Levels = append(res.Levels, levelLimits{Name: l.Name, Type: typ, Shares: int(l.Shares), Nominal: l.NominalCL, Lendable: l.LendableCL,
			Borrow: l.BorrowingCL, Min: l.MinCL, Max: l.MaxCL, Seats: seats, Current: current[i]})
		res.TotalNominal += l.NominalCL
		res.TotalCurrent += current[i]
	}
	if err := out.write(stdout, res, res.writeText); err != nil {
		return failure(stderr, "limits", err)
	}
	return exitOK
}

// currentLimits returns each level's concurrency limit after one
// borrowing adjustment with no demand, as at start-up (the CURRENT column).
func currentLimits(limits []seats.LevelLimits, serverConcurrency int) []int {
	levels := make([]seats.BorrowingLevel, len(limits))
	for i, l := range limits {
		levels[i] = seats.BorrowingLevel{Limits: l, CurrentCL: l.InitialCL}
	}
	alloc := seats.Borrow(serverConcurrency, levels, seats.BorrowingOptions{})
	current := make([]int, len(limits))
	for i := range limits {
		current[i] = alloc.Levels[i].CurrentCL
	}
	return current
}

// limitsResult is the -o json shape of limits.
type limitsResult struct {
	ServerConcurrency int           `json:"serverConcurrency"`
	Levels            []levelLimits `json:"levels"`
	TotalNominal      int           `json:"totalNominal"`
	TotalCurrent      int           `json:"totalCurrent"`
}

type levelLimits struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Shares   int    `json:"shares"`
	Nominal  int    `json:"nominal"`
	Lendable int    `json:"lendable"`
	Borrow   int    `json:"borrow"`
	Min      int    `json:"min"`
	Max      int    `json:"max"`
	Seats    int    `json:"seats"`
	Current  int    `json:"current"`
}

func (r limitsResult) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "LEVEL\tTYPE\tSHARES\tNOMINAL\tLENDABLE\tBORROW\tMIN\tMAX\tSEATS\tCURRENT")
	for _, l := range r.Levels {
		seats := "-"
		if l.Type == "queue" {
			seats = fmt.Sprint(l.Seats)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\n", l.Name, l.Type, l.Shares, l.Nominal, l.Lendable,
			l.Borrow, l.Min, l.Max, seats, l.Current)
	}
	fmt.Fprintf(tw, "total\t\t\t%d\t\t\t\t\t\t%d\n", r.TotalNominal, r.TotalCurrent)
	return tw.Flush()
}
