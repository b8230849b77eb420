package seats

import (
	"errors"
	"fmt"
	"math"

	"github.com/fairslice/fairslice/flowschema"
)

// MaxSeatsFraction is the fraction of a queuing level's nominal limit one
// request may occupy (upstream's priorityLevelMaxSeatsPercent).
const MaxSeatsFraction = 0.15

// LevelLimits are the static concurrency limits of a priority level, in
// seats, derived from the server's concurrency limit and every level's
// shares (upstream's finishQueueSetReconfigsLocked).
type LevelLimits struct {
	Name    string
	Exempt  bool
	Queuing bool  // limited with limitResponse Queue
	Shares  int32 // nominalConcurrencyShares
	// NominalCL = ceil(server · shares / Σ shares), Σ over every level,
	// exempt (usually 0 shares) and quiescing ones included.
	NominalCL int
	// LendableCL = round(NominalCL · lendablePercent / 100).
	LendableCL int
	// BorrowingCL = round(NominalCL · borrowingLimitPercent / 100), or the
	// server's limit when borrowingLimitPercent is unset (always for exempt).
	BorrowingCL int
	MinCL       int // NominalCL − LendableCL
	MaxCL       int // NominalCL + BorrowingCL
	// MaxSeats is the most seats one request may take at this level:
	// max(1, min(ceil(0.15 · NominalCL), NominalCL / handSize)) for queuing
	// levels, 0 (meaning the work estimator's global cap) otherwise.
	MaxSeats int
	// InitialCL is the current limit a new level starts with,
	// NominalCL − LendableCL/2, before the first borrowing adjustment.
	InitialCL int
}

// ComputeLimits returns the limits of levels, in order, for a server
// concurrency limit (upstream: --max-requests-inflight +
// --max-mutating-requests-inflight, 600 by default). Pass every level the
// server has, including mandatory and quiescing ones: all shares count.
// Unset optional fields read as upstream's controller reads them: an
// unset lendablePercent as 0, an unset borrowingLimitPercent as no limit,
// an exempt level's unset nominalConcurrencyShares as 0 — which are the v1
// defaults — and a Limited level's unset nominalConcurrencyShares as the
// default 30 (upstream's controller dereferences it and crashes; only
// objects that skipped the API server's defaulting lack it). It fails if
// serverConcurrency is not positive, a level is neither Limited nor
// Exempt, or the shares sum to 0.
func ComputeLimits(serverConcurrency int, levels []flowschema.PriorityLevelConfiguration) ([]LevelLimits, error) {
	if serverConcurrency <= 0 {
		return nil, fmt.Errorf("seats: server concurrency limit %d is not positive", serverConcurrency)
	}
	type commons struct {
		shares, lendable int32
		borrowing        *int32
	}
	cs := make([]commons, len(levels))
	var shareSum float64
	var errs []error
	for i := range levels {
		s := &levels[i].Spec
		switch {
		case s.Limited != nil:
			l := s.Limited
			cs[i] = commons{shares: deref(l.NominalConcurrencyShares, flowschema.DefaultNominalConcurrencyShares),
				lendable: deref(l.LendablePercent, 0), borrowing: l.BorrowingLimitPercent}
		case s.Exempt != nil:
			cs[i] = commons{shares: deref(s.Exempt.NominalConcurrencyShares, 0), lendable: deref(s.Exempt.LendablePercent, 0)}
		default:
			errs = append(errs, fmt.Errorf("seats: priority level %q has neither limited nor exempt settings", levels[i].Name))
		}
		shareSum += float64(cs[i].shares)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if shareSum <= 0 {
		return nil, fmt.Errorf("seats: the priority levels' nominalConcurrencyShares sum to %v; at least one must be positive", shareSum)
	}
	out := make([]LevelLimits, len(levels))
	for i := range levels {
		pl := &levels[i]
		c := cs[i]
		nominal := int(math.Ceil(float64(serverConcurrency) * float64(c.shares) / shareSum))
		lendable := int(math.Round(float64(nominal) * float64(c.lendable) / 100))
		borrowing := serverConcurrency
		if c.borrowing != nil {
			borrowing = int(math.Round(float64(nominal) * float64(*c.borrowing) / 100))
		}
		ll := LevelLimits{
			Name:        pl.Name,
			Exempt:      pl.Spec.Limited == nil,
			Shares:      c.shares,
			NominalCL:   nominal,
			LendableCL:  lendable,
			BorrowingCL: borrowing,
			MinCL:       nominal - lendable,
			MaxCL:       nominal + borrowing,
			InitialCL:   nominal - lendable/2,
		}
		if l := pl.Spec.Limited; l != nil && l.LimitResponse.Queuing != nil {
			ll.Queuing = true
			ll.MaxSeats = MaxSeats(nominal, int(l.LimitResponse.Queuing.HandSize))
		}
		out[i] = ll
	}
	return out, nil
}

// MaxSeats is the per-request seat cap of a queuing level with the given
// nominal limit and hand size: max(1, min(ceil(0.15 · nominal),
// nominal / handSize)), the division truncating as upstream's int32
// arithmetic does, so a negative hand size gives 1. A hand size of 0, on
// which upstream's controller crashes (an integer division by zero; only
// objects that skipped the API server's defaulting and validation have
// it, with queues 0), counts as 1; one beyond int32 (which the API cannot
// hold) divides to 0. It never panics.
func MaxSeats(nominalCL, handSize int) int {
	if handSize == 0 {
		handSize = 1
	}
	// int32(nominalCL) truncates as upstream; the division is in 64 bits so
	// that a hand size whose low 32 bits are 0 does not divide by zero.
	perHand := int64(int32(nominalCL)) / int64(handSize)
	return int(math.Max(1, math.Min(math.Ceil(float64(nominalCL)*MaxSeatsFraction), float64(perHand))))
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
