package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/fairslice/fairslice/fairqueue/scenario"
	"github.com/fairslice/fairslice/shufflesharding"
)

// Defaults of the Kubernetes flowcontrol API for a queuing priority level.
const (
	defaultQueues   = 64
	defaultHandSize = 8
)

// hashFlag is a flag.Value holding a 64-bit hash written in decimal or as
// 0x-prefixed hexadecimal.
type hashFlag struct {
	value uint64
	set   bool
}

func (h *hashFlag) String() string {
	if h == nil || !h.set {
		return ""
	}
	return fmt.Sprintf("%#x", h.value)
}

func (h *hashFlag) Set(s string) error {
	v, err := parseHash(s)
	if err != nil {
		return err
	}
	h.value, h.set = v, true
	return nil
}

// parseHash parses an unsigned 64-bit value in decimal or, with a 0x or 0X
// prefix, hexadecimal, as scenario files accept it (scenario.ParseHash).
func parseHash(s string) (uint64, error) { return scenario.ParseHash(s) }

// dealResult is the --json output of deal.
type dealResult struct {
	Deck          int     `json:"deck"`
	Hand          int     `json:"hand"`
	FlowSchema    *string `json:"flowSchema,omitempty"`
	Distinguisher *string `json:"distinguisher,omitempty"`
	Hash          string  `json:"hash"`
	Cards         []int   `json:"cards"`
}

const dealUsage = `Usage:
  fairslice deal [--deck N] [--hand N] --hash HASH [-o text|json|yaml]
  fairslice deal [--deck N] [--hand N] --flow-schema NAME [--distinguisher D] [-o text|json|yaml]

Deal prints the hand of queue indexes, in deal order, that shuffle sharding
gives a flow, exactly as Kubernetes API Priority and Fairness deals it. The
flow is given either by its hash or by its FlowSchema name and distinguisher,
which are hashed as APF does. The defaults for --deck and --hand are the
Kubernetes API defaults for a queuing priority level.

-o json (or yaml): {"deck", "hand", "flowSchema" and "distinguisher" (with
--flow-schema only), "hash" (0x and 16 hexadecimal digits), "cards"}.

Exit status: 0 success, 1 a deck and hand the dealer rejects, 2 bad
command line.

Example:
  fairslice deal --deck 128 --hand 8 --hash 0xdeadbeef
  hash 0x00000000deadbeef deck 128 hand 8: [111 55 122 74 14 0 1 2]

Flags:
`

// dealProblems checks deal's command line: no positional arguments, and
// exactly one of --hash and --flow-schema, --distinguisher only with the
// latter; set holds the flags given.
func dealProblems(rest []string, set map[string]bool) []string {
	var problems []string
	if len(rest) > 0 {
		problems = append(problems, fmt.Sprintf("unexpected argument %q", rest[0]))
	}
	switch {
	case set["hash"] && set["flow-schema"]:
		problems = append(problems, "--hash and --flow-schema are mutually exclusive")
	case !set["hash"] && !set["flow-schema"]:
		problems = append(problems, "one of --hash or --flow-schema is required")
	}
	if set["distinguisher"] && !set["flow-schema"] {
		problems = append(problems, "--distinguisher needs --flow-schema")
	}
	return problems
}

// runDeal implements "fairslice deal".
func runDeal(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice deal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	deck := fs.Int("deck", defaultQueues, "number of queues, `N` cards in the deck")
	hand := fs.Int("hand", defaultHandSize, "hand size: `N` queues dealt to each flow")
	var hash hashFlag
	fs.Var(&hash, "hash", "the flow's 64-bit `HASH`, decimal or 0x-hexadecimal")
	flowSchema := fs.String("flow-schema", "", "FlowSchema `NAME`; the hash is computed from it as APF does")
	distinguisher := fs.String("distinguisher", "", "flow distinguisher `D` (user name or namespace; default empty), with --flow-schema")
	asJSON := fs.Bool("json", false, "print the result as JSON (the same as -o json)")
	out := outputFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), dealUsage)
		fs.PrintDefaults()
	}
	rest, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if problems := dealProblems(rest, set); len(problems) > 0 {
		fmt.Fprintf(stderr, "fairslice deal: %s\nRun 'fairslice deal --help' for usage.\n", strings.Join(problems, "; "))
		return exitUsage
	}

	d, err := shufflesharding.NewDealer(*deck, *hand)
	if err != nil {
		fmt.Fprintf(stderr, "fairslice deal: cannot deal a hand of %d from a deck of %d: %v\n", *hand, *deck, err)
		return exitFailure
	}
	res := dealResult{Deck: *deck, Hand: *hand}
	h := hash.value
	if set["flow-schema"] {
		h = shufflesharding.FlowHash(*flowSchema, *distinguisher)
		res.FlowSchema, res.Distinguisher = flowSchema, distinguisher
	}
	res.Hash = fmt.Sprintf("0x%016x", h)
	res.Cards = d.DealIntoHand(h, nil)

	if *asJSON {
		*out = outputJSON
	}
	text := func(w io.Writer) error {
		if res.FlowSchema != nil {
			fmt.Fprintf(w, "flow-schema %q distinguisher %q ", *res.FlowSchema, *res.Distinguisher)
		}
		_, err := fmt.Fprintf(w, "hash %s deck %d hand %d: %v\n", res.Hash, res.Deck, res.Hand, res.Cards)
		return err
	}
	if err := out.write(stdout, res, text); err != nil {
		fmt.Fprintf(stderr, "fairslice deal: %v\n", err)
		return exitFailure
	}
	return exitOK
}
