package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/fairslice/fairslice/flowschema"
)

const limitsUsage = `Usage: fairslice limits --server-concurrency N [--config FILE]

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
configuration); missing mandatory levels are added, broken ones ignored.

Flags:
`

// runLimits implements "fairslice limits".
func runLimits(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice limits", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `FILE` (default: the bootstrap configuration)")
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
	cfg, err := loadConfig(*config)
	if err != nil {
		return failure(stderr, "limits", err)
	}
	c, err := flowschema.Compile(cfg)
	if err != nil {
		return failure(stderr, "limits", err)
	}
	limits, err := c.Limits(*server)
	if err != nil {
		return failure(stderr, "limits", err)
	}
	levels := make([]flowschema.BorrowingLevel, len(limits))
	for i, l := range limits {
		levels[i] = flowschema.BorrowingLevel{Limits: l, CurrentCL: l.InitialCL}
	}
	alloc := flowschema.Borrow(*server, levels, flowschema.BorrowingOptions{})
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "LEVEL\tTYPE\tSHARES\tNOMINAL\tLENDABLE\tBORROW\tMIN\tMAX\tSEATS\tCURRENT")
	var sumNominal, sumCurrent int
	for i, l := range limits {
		typ := "reject"
		switch {
		case l.Exempt:
			typ = "exempt"
		case l.Queuing:
			typ = "queue"
		}
		seats := "-"
		if l.Queuing {
			seats = fmt.Sprint(l.MaxSeats)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\n", l.Name, typ, l.Shares, l.NominalCL, l.LendableCL,
			l.BorrowingCL, l.MinCL, l.MaxCL, seats, alloc.Levels[i].CurrentCL)
		sumNominal += l.NominalCL
		sumCurrent += alloc.Levels[i].CurrentCL
	}
	fmt.Fprintf(tw, "total\t\t\t%d\t\t\t\t\t\t%d\n", sumNominal, sumCurrent)
	if err := tw.Flush(); err != nil {
		return failure(stderr, "limits", err)
	}
	return exitOK
}
