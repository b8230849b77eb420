package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fairslice/fairslice/shufflesharding"
)

// oddsConfig is one row of the odds table: a number of queues (the deck)
// and a hand size.
type oddsConfig struct {
	Queues int `json:"queues"`
	Hand   int `json:"hand"`
}

// docsConfigs are the rows of the "Example Shuffle Sharding Configurations"
// table on the Kubernetes "API Priority and Fairness" documentation page,
// in its order.
var docsConfigs = []oddsConfig{
	{32, 12}, {32, 10}, {64, 10}, {64, 9}, {64, 8}, {128, 8},
	{128, 7}, {256, 7}, {256, 6}, {512, 6}, {1024, 6},
}

// docsElephants are the table's columns.
var docsElephants = []int{1, 4, 16}

// maxOddsHand bounds the hand size odds accepts: the computation's cost
// grows roughly with the cube of the hand size, and APF hands are at most 15.
const maxOddsHand = 1000

// maxOddsQueues is the largest deck the computation accepts (1<<26, the
// dealer's limit).
const maxOddsQueues = 1 << 26

// listFlag is a repeatable flag.Value whose every occurrence may hold a
// comma-separated list; it collects the items.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return fmt.Errorf("empty item in %q", s)
		}
		*l = append(*l, item)
	}
	return nil
}

// ints parses every item as a decimal int, naming the flag in errors.
func (l listFlag) ints(flagName string) ([]int, []string) {
	var out []int
	var problems []string
	for _, s := range l {
		v, err := strconv.Atoi(s)
		if err != nil {
			problems = append(problems, fmt.Sprintf("--%s: %q is not an integer", flagName, s))
			continue
		}
		out = append(out, v)
	}
	return out, problems
}

// parseConfig parses QUEUESxHAND, as in "64x8".
func parseConfig(s string) (oddsConfig, error) {
	q, h, ok := strings.Cut(strings.ToLower(s), "x")
	queues, err1 := strconv.Atoi(q)
	hand, err2 := strconv.Atoi(h)
	if !ok || err1 != nil || err2 != nil {
		return oddsConfig{}, fmt.Errorf("--config: %q is not QUEUESxHAND, e.g. 64x8", s)
	}
	return oddsConfig{Queues: queues, Hand: hand}, nil
}

// validate reports why the probability is undefined for c, if it is.
func (c oddsConfig) validate() error {
	switch {
	case c.Queues < 1 || c.Queues > maxOddsQueues:
		return fmt.Errorf("queues %d out of range [1, %d]", c.Queues, maxOddsQueues)
	case c.Hand < 1:
		return fmt.Errorf("hand %d is not positive", c.Hand)
	case c.Hand > c.Queues:
		hint := ""
		if c.Hand <= maxOddsQueues && c.Queues <= maxOddsHand {
			hint = fmt.Sprintf(" (did you mean %dx%d?)", c.Hand, c.Queues)
		}
		return fmt.Errorf("hand %d is greater than queues %d%s", c.Hand, c.Queues, hint)
	case c.Hand > maxOddsHand:
		return fmt.Errorf("hand %d is too large to compute (at most %d)", c.Hand, maxOddsHand)
	}
	return nil
}

// oddsRow is one row of --json output.
type oddsRow struct {
	oddsConfig
	EntropyBits   int       `json:"entropyBits"`
	DealerAccepts bool      `json:"dealerAccepts"`
	Elephants     []int     `json:"elephants"`
	Probabilities []float64 `json:"probabilities"`
}

const oddsUsage = `Usage:
  fairslice odds [--config QUEUESxHAND]... [--queues N,... --hand N,...] [--elephants N,...] [-o text|json|yaml] [--svg FILE]

Odds prints, for each shuffle-sharding configuration (rows) and number of
elephant flows (columns), the probability that a given mouse flow is
squished: that every queue in its hand is also in some elephant's hand, with
all hands independent and uniformly random. Without --config, --queues or
--hand it prints the rows of the "Example Shuffle Sharding Configurations"
table of the Kubernetes API Priority and Fairness documentation. The bits
column is the hash entropy the dealer requires; configurations needing more
than 60 bits, which Kubernetes rejects, are marked with *.
--svg FILE (or --html FILE) draws the table's cells as points over a curve
per deck through every hand size, one panel per number of elephants.

-o json (or yaml): an array of rows, each {"queues", "hand", "entropyBits",
"dealerAccepts", "elephants": [N...], "probabilities": [P...]}.

Exit status: 0 success, 2 bad command line.

Examples:
  fairslice odds
  fairslice odds --config 64x8,128x6 --elephants 1,2,4,8
  fairslice odds --queues 64,128 --hand 6,8

Flags:
`

// oddsFlags are odds' flags.
type oddsFlags struct {
	configs, queues, hands, elephants listFlag
	digits                            *int
}

func (f *oddsFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.configs, "config", "configuration `QUEUESxHAND`, e.g. 64x8; repeatable, comma-separated lists allowed")
	fs.Var(&f.queues, "queues", "queue counts (`N,...`); with --hand, every combination is a row")
	fs.Var(&f.hands, "hand", "hand sizes (`N,...`); with --queues, every combination is a row")
	fs.Var(&f.elephants, "elephants", "numbers of elephants, one column each (`N,...`; default 1,4,16)")
	f.digits = fs.Int("digits", 4, "significant digits to print; 0 prints the shortest exact form")
}

// runOdds implements "fairslice odds".
func runOdds(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fairslice odds", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f oddsFlags
	f.register(fs)
	asJSON := fs.Bool("json", false, "print the table as JSON (the same as -o json)")
	out := outputFlag(fs)
	pic := addPictureFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), oddsUsage)
		fs.PrintDefaults()
	}
	rest, stop, code := parseInterspersed(fs, args)
	if stop {
		return code
	}
	var problems []string
	if len(rest) > 0 {
		problems = append(problems, fmt.Sprintf("unexpected argument %q", rest[0]))
	}
	rows, p := f.rows()
	elephants, pe := f.elephantCounts()
	problems = append(append(problems, p...), pe...)
	if *f.digits < 0 || *f.digits > 17 {
		problems = append(problems, fmt.Sprintf("--digits: %d out of range [0, 17]", *f.digits))
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "fairslice odds: %s\n", p)
		}
		fmt.Fprintln(stderr, "Run 'fairslice odds --help' for usage.")
		return exitUsage
	}
	table := oddsTable(rows, elephants)
	if *asJSON {
		*out = outputJSON
	}
	text := func(w io.Writer) error {
		writeOddsTable(w, table, elephants, *f.digits)
		return nil
	}
	if err := out.write(stdout, table, text); err != nil {
		fmt.Fprintf(stderr, "fairslice odds: %v\n", err)
		return exitFailure
	}
	return pic.drawOdds(table, stderr)
}

// rows returns the configurations the flags ask for (the documentation's
// table without --config, --queues or --hand), and the problems found.
func (f *oddsFlags) rows() ([]oddsConfig, []string) {
	var problems []string
	var rows []oddsConfig
	for _, s := range f.configs {
		c, err := parseConfig(s)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		rows = append(rows, c)
	}
	queues, p1 := f.queues.ints("queues")
	hands, p2 := f.hands.ints("hand")
	problems = append(append(problems, p1...), p2...)
	if (len(f.queues) > 0) != (len(f.hands) > 0) {
		problems = append(problems, "--queues and --hand must be given together")
	}
	for _, q := range queues {
		for _, h := range hands {
			rows = append(rows, oddsConfig{Queues: q, Hand: h})
		}
	}
	if len(f.configs) == 0 && len(f.queues) == 0 && len(f.hands) == 0 {
		rows = docsConfigs
	}
	for _, c := range rows {
		if err := c.validate(); err != nil {
			problems = append(problems, fmt.Sprintf("configuration %dx%d: %v", c.Queues, c.Hand, err))
		}
	}
	return rows, problems
}

// elephantCounts returns the columns: --elephants, or the documentation's.
func (f *oddsFlags) elephantCounts() ([]int, []string) {
	if len(f.elephants) == 0 {
		return docsElephants, nil
	}
	elephants, problems := f.elephants.ints("elephants")
	for _, e := range elephants {
		if e < 0 {
			problems = append(problems, fmt.Sprintf("--elephants: %d is negative", e))
		}
	}
	return elephants, problems
}

// oddsTable computes the rows of the table.
func oddsTable(rows []oddsConfig, elephants []int) []oddsRow {
	table := make([]oddsRow, len(rows))
	for i, c := range rows {
		bits := shufflesharding.RequiredEntropyBits(c.Queues, c.Hand)
		_, err := shufflesharding.NewDealer(c.Queues, c.Hand)
		table[i] = oddsRow{oddsConfig: c, EntropyBits: bits, DealerAccepts: err == nil, Elephants: elephants}
		for _, e := range elephants {
			table[i].Probabilities = append(table[i].Probabilities, shufflesharding.SquishProbability(c.Queues, c.Hand, e))
		}
	}
	return table
}

func writeOddsTable(w io.Writer, table []oddsRow, elephants []int, digits int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "queues\thand\tbits\t")
	for _, e := range elephants {
		noun := "elephants"
		if e == 1 {
			noun = "elephant"
		}
		fmt.Fprintf(tw, "%d %s\t", e, noun)
	}
	fmt.Fprintln(tw)
	rejected := false
	for _, r := range table {
		mark := ""
		if !r.DealerAccepts {
			mark, rejected = "*", true
		}
		fmt.Fprintf(tw, "%d\t%d\t%d%s\t", r.Queues, r.Hand, r.EntropyBits, mark)
		for _, p := range r.Probabilities {
			prec := digits
			if prec == 0 {
				prec = -1
			}
			fmt.Fprintf(tw, "%s\t", strconv.FormatFloat(p, 'g', prec, 64))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if rejected {
		fmt.Fprintln(w, "* more than 60 bits: Kubernetes' NewDealer rejects this configuration")
	}
}
