package propagation

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairslice/fairslice/slicer"
)

// ChurnPattern is how a Service's pods are replaced.
type ChurnPattern int

const (
	// RollingUpdate replaces every pod once, Surge pods per sync, in an
	// order unrelated to where they sit in the slices (the old
	// ReplicaSet's scale-down picks pods by its own ranking).
	RollingUpdate ChurnPattern = iota
	// RandomChurn replaces random pods at Rate per second for Duration;
	// the controller syncs once per BatchPeriod, replacing the pods that
	// failed since.
	RandomChurn
)

// String returns "rolling-update" or "random-churn".
func (p ChurnPattern) String() string {
	if p == RandomChurn {
		return "random-churn"
	}
	return "rolling-update"
}

// SweepConfig describes a Service, its watchers and how its pods change.
// The zero values of the churn fields are the defaults: a rolling update
// one pod per sync; random churn of one pod per second for an hour, each
// replacement synced on its own.
type SweepConfig struct {
	Config
	Pattern ChurnPattern
	// Surge is the pods a rolling update replaces per sync (a
	// Deployment's maxSurge), 1..Pods; 0 means 1.
	Surge int
	// Rate is the pods replaced per second in RandomChurn (> 0; 0 means
	// 1), Duration how long (0 means an hour), and BatchPeriod how often
	// the controller syncs (kube-controller-manager's
	// --endpoint-updates-batch-period; 0 means every replacement is a
	// sync of its own).
	Rate        float64
	Duration    time.Duration
	BatchPeriod time.Duration
	// Seed chooses which pods are replaced; every size sees the same
	// replacements.
	Seed uint64
}

// SweepRow is the cost of one max-endpoints-per-slice.
type SweepRow struct {
	MaxEndpointsPerSlice int
	// Slices is the number of slice objects each watcher holds.
	Slices int
	// ListBytes is what one watcher receives when it lists them all (at
	// start and on every relist).
	ListBytes Size
	// Writes and Written are the slice updates of the churn and their
	// bytes; every write is one watch event to each of the Nodes.
	Writes  int
	Written Size
}

// Sweep is the result of SweepSizes.
type Sweep struct {
	Config SweepConfig
	// Replacements and Syncs are the pods replaced and the controller
	// syncs that replaced them.
	Replacements, Syncs int
	// Rows has one row per max-endpoints-per-slice, 1..1000 in order.
	Rows []SweepRow
	// MinSent is the size with the fewest protobuf bytes sent (the
	// smallest such size on a tie).
	MinSent int
}

// Sent returns the bytes a row sends to watchers during the churn.
func (s *Sweep) Sent(r SweepRow) (protobuf, json float64) {
	n := float64(s.Config.Nodes)
	return float64(r.Written.Protobuf) * n, float64(r.Written.JSON) * n
}

func (c *SweepConfig) withDefaults() (SweepConfig, error) {
	d := *c
	errs := []error{d.Config.validate()}
	if d.Surge == 0 {
		d.Surge = 1
	}
	if d.Rate == 0 {
		d.Rate = 1
	}
	if d.Duration == 0 {
		d.Duration = time.Hour
	}
	if d.Surge < 1 || d.Surge > max(d.Pods, 1) {
		errs = append(errs, fmt.Errorf("propagation: SweepConfig.Surge: %d is out of range 1..%d (the pods)", c.Surge, d.Pods))
	}
	if !(d.Rate > 0) || math.IsInf(d.Rate, 0) {
		errs = append(errs, fmt.Errorf("propagation: SweepConfig.Rate: %g is not a positive rate", c.Rate))
	}
	if d.Duration < 0 {
		errs = append(errs, fmt.Errorf("propagation: SweepConfig.Duration: %v is negative", c.Duration))
	}
	if d.BatchPeriod < 0 {
		errs = append(errs, fmt.Errorf("propagation: SweepConfig.BatchPeriod: %v is negative", c.BatchPeriod))
	}
	if d.Pattern != RollingUpdate && d.Pattern != RandomChurn {
		errs = append(errs, fmt.Errorf("propagation: SweepConfig.Pattern: %d is not RollingUpdate or RandomChurn", c.Pattern))
	}
	if err := errors.Join(errs...); err != nil {
		return d, err
	}
	if n := d.Rate * d.Duration.Seconds(); d.Pattern == RandomChurn && n > 1e8 {
		return d, fmt.Errorf("propagation: SweepConfig.Rate × Duration: %.3g replacements, more than 1e8", n)
	}
	return d, nil
}

// syncs returns the pods replaced in each controller sync of the churn.
func (c *SweepConfig) syncs() [][]int {
	r := rand.New(rand.NewPCG(c.Seed, 0x5eed))
	var out [][]int
	if c.Pattern == RollingUpdate {
		order := r.Perm(c.Pods)
		for len(order) > 0 {
			n := min(c.Surge, len(order))
			out = append(out, order[:n])
			order = order[n:]
		}
		return out
	}
	total := int(math.Round(c.Rate * c.Duration.Seconds()))
	per := max(1, int(math.Round(c.Rate*c.BatchPeriod.Seconds())))
	inBatch := make([]bool, c.Pods)
	for total > 0 {
		n := min(per, total, c.Pods)
		total -= n
		batch := make([]int, 0, n)
		for len(batch) < n { // n distinct pods
			if p := r.IntN(c.Pods); !inBatch[p] {
				inBatch[p] = true
				batch = append(batch, p)
			}
		}
		for _, p := range batch {
			inBatch[p] = false
		}
		out = append(out, batch)
	}
	return out
}

// SweepSizes runs the churn of c once for every max-endpoints-per-slice
// from 1 to 1000 and counts, for each, the slice objects, the bytes of a
// full list, and the writes and bytes of the churn, sized with the
// encoding model (EndpointSliceSize).
//
// Each sync replaces its pods in place: the slices that held the old pods
// are rewritten with the new ones, which is what the reconciler plans
// when as many endpoints are added as removed (they fill the places the
// removed ones freed; TestSweepMatchesReconciler checks it). A slice is
// written once per sync however many of its pods changed, which is why
// larger slices can win when many pods change at once. Slices carry the
// generateName the controller creates them with (Simulate leaves it out).
func SweepSizes(c SweepConfig) (Sweep, error) {
	cfg, err := c.withDefaults()
	if err != nil {
		return Sweep{}, err
	}
	syncs := cfg.syncs()
	s := Sweep{Config: cfg, Syncs: len(syncs)}
	for _, b := range syncs {
		s.Replacements += len(b)
	}
	ch := sizeChurn(cfg.Config, syncs)
	for per := 1; per <= slicer.MaxMaxEndpointsPerSlice; per++ {
		s.Rows = append(s.Rows, sweepOne(cfg.Config, per, syncs, ch))
	}
	best := 0
	for i, r := range s.Rows {
		if r.Written.Protobuf < s.Rows[best].Written.Protobuf {
			best = i
		}
	}
	s.MinSent = s.Rows[best].MaxEndpointsPerSlice
	return s, nil
}

// churnSizes are the encoded sizes of the endpoints of a churn, the same
// for every slice size: each pod's first endpoint, and the endpoint that
// each replacement of each sync brings.
type churnSizes struct {
	initial []Size
	next    [][]Size
}

func sizeChurn(c Config, syncs [][]int) churnSizes {
	cs := churnSizes{initial: make([]Size, c.Pods), next: make([][]Size, len(syncs))}
	for i := range c.Pods {
		cs.initial[i] = endpointSize(ptr(pod(0, i, c.Nodes)))
	}
	gen := make([]uint8, c.Pods)
	for si, batch := range syncs {
		cs.next[si] = make([]Size, len(batch))
		for j, i := range batch {
			gen[i] = gen[i]%14 + 1 // pod() keeps addresses valid for generations 0..15
			cs.next[si][j] = endpointSize(ptr(pod(int(gen[i]), i, c.Nodes)))
		}
	}
	return cs
}

// sweepOne plays the churn with slices of at most per endpoints, packed in
// pod order as a create from nothing packs them. O(pods + replacements).
func sweepOne(c Config, per int, syncs [][]int, ch churnSizes) SweepRow {
	n := (c.Pods + per - 1) / per
	row := SweepRow{MaxEndpointsPerSlice: per, Slices: n}
	sums := make([]elems, n)
	cur := slices.Clone(ch.initial)
	for i := range c.Pods {
		sums[i/per].add(cur[i])
	}
	proto := slice(nil)
	proto.GenerateName = slicer.GenerateName(svcName) // as the controller creates slices
	frame := sliceFrameOf(proto, stored)
	size := frame.size
	for _, e := range sums {
		row.ListBytes = row.ListBytes.Add(size(e))
	}
	var touched []int
	lastSync := make([]int, n) // 1 + the last sync that touched each slice
	for si, batch := range syncs {
		touched = touched[:0]
		for j, i := range batch {
			k := i / per
			if lastSync[k] != si+1 {
				lastSync[k] = si + 1
				touched = append(touched, k)
			}
			sums[k].remove(cur[i])
			cur[i] = ch.next[si][j]
			sums[k].add(cur[i])
		}
		for _, k := range touched {
			row.Writes++
			row.Written = row.Written.Add(size(sums[k]))
		}
	}
	return row
}

// sweepSizesShown are the rows WriteTable prints besides the marked ones.
var sweepSizesShown = []int{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}

// ShownSizes returns the sizes WriteTable shows when given none: 1, 2, 5,
// 10, ... 1000 and MinSent, in order.
func (s *Sweep) ShownSizes() []int {
	sizes := append(slices.Clone(sweepSizesShown), s.MinSent)
	slices.Sort(sizes)
	return slices.Compact(sizes)
}

// WriteTable writes the sweep as a table: one row per size in sizes (nil:
// 1, 2, 5, ..., 1000 and the size with the fewest bytes sent), marking
// that size and the default 100. Bytes are protobuf, JSON in
// parentheses, in decimal units.
func (s *Sweep) WriteTable(w io.Writer, sizes []int) error {
	if sizes == nil {
		sizes = s.ShownSizes()
	}
	c := s.Config
	if c.Pattern == RollingUpdate {
		fmt.Fprintf(w, "Rolling update of %d pods, %d per sync (%d syncs), watched by %d nodes:\n\n", c.Pods, c.Surge, s.Syncs, c.Nodes)
	} else {
		fmt.Fprintf(w, "Random churn of %d pods at %g/s for %v (%d replacements in %d syncs, batch period %v), watched by %d nodes:\n\n",
			c.Pods, c.Rate, c.Duration, s.Replacements, s.Syncs, c.BatchPeriod, c.Nodes)
	}
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "max/slice\tslices per watcher\tlist per watcher\twrites\twatch events\tbytes written\tbytes sent\t\t")
	for _, per := range sizes {
		if per < 1 || per > len(s.Rows) {
			return fmt.Errorf("propagation: WriteTable: size %d is out of range 1..%d", per, len(s.Rows))
		}
		r := s.Rows[per-1]
		p, j := s.Sent(r)
		mark := ""
		switch {
		case per == s.MinSent && per == slicer.DefaultMaxEndpointsPerSlice:
			mark = "fewest bytes sent; default"
		case per == s.MinSent:
			mark = "fewest bytes sent"
		case per == slicer.DefaultMaxEndpointsPerSlice:
			mark = "default"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s (%s)\t%d\t%s\t%s (%s)\t%s (%s)\t%s\t\n", per, r.Slices,
			human(float64(r.ListBytes.Protobuf)), human(float64(r.ListBytes.JSON)), r.Writes,
			count(float64(r.Writes)*float64(c.Nodes)),
			human(float64(r.Written.Protobuf)), human(float64(r.Written.JSON)), human(p), human(j), mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The empty mark column leaves trailing blanks; drop them.
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(w, out.String())
	return err
}
