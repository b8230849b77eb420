package apf

import (
	"errors"
	"fmt"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/seats"
)

// BorrowingAdjustmentPeriod is how often upstream re-divides the server's
// concurrency among the priority levels.
const BorrowingAdjustmentPeriod = 10 * time.Second

// ManualAdjustment, as Options.AdjustPeriod, turns the controller's own
// periodic borrowing adjustment off; the caller calls AdjustBorrowing.
const ManualAdjustment time.Duration = -1

// StarvationAdjustInterval is the shortest time between two adjustments
// that Options.AdjustOnStarvation triggers, so that a level that cannot get
// seats (the server is saturated) does not cause one per request.
const StarvationAdjustInterval = time.Second

// Options are the optional parts of a Controller.
type Options struct {
	// ServerConcurrencyLimit is the number of seats the server divides
	// among its priority levels (kube-apiserver's --max-requests-inflight
	// plus --max-mutating-requests-inflight, 600 by default). Required.
	ServerConcurrencyLimit int
	// Clock defaults to fairqueue.RealClock.
	Clock fairqueue.Clock
	// Observer receives metrics events; nil ignores them.
	Observer Observer
	// AdjustPeriod is how often the controller runs the borrowing
	// adjustment itself, on a timer of its Clock, until Close. Zero means
	// BorrowingAdjustmentPeriod (10 s), as upstream's controller does: a
	// level whose limit is 0 seats (at a small ServerConcurrencyLimit,
	// global-default starts so) gets seats at the next adjustment after
	// demand appears, so a request waits at most one period. ManualAdjustment
	// (any negative value) opts out: the caller then runs AdjustBorrowing on
	// its own schedule, and a level left at 0 seats serves nothing until it
	// does.
	AdjustPeriod time.Duration
	// AdjustOnStarvation, beyond upstream, runs a borrowing adjustment at
	// once when a request starts waiting at a non-exempt level whose limit
	// is 0 seats, instead of leaving it to wait for the next period (at most
	// one such adjustment per StarvationAdjustInterval). It applies with any
	// AdjustPeriod; StandaloneOptions turns it on.
	AdjustOnStarvation bool
	// Borrowing selects deliberate departures from upstream's borrowing
	// (seats.BorrowingOptions); the zero value is upstream's.
	Borrowing seats.BorrowingOptions
	// Lenient makes New and Reconfigure take a configuration as upstream's
	// APF controller alone does: objects that flowschema.Validate refuses
	// are used as far as they go (a broken level is ignored and its
	// FlowSchemas skipped), and the mandatory objects the configuration
	// lacks are added only after references are resolved, so a FlowSchema
	// naming a missing exempt level is skipped. For differential testing
	// against that controller; the zero value is strict (see New).
	Lenient bool
	// Adaptive, when not nil, makes the total seats divided among the
	// priority levels follow the execution latency the controller measures
	// (see the package doc, "Adaptive total"), starting from its floor;
	// ServerConcurrencyLimit is then the default ceiling. nil keeps the
	// static total, upstream's behaviour, decision for decision.
	Adaptive *AdaptiveOptions
	// AsStored takes the objects as the API server stores them
	// (flowschema.CompileOptions.AsStored): no v1 defaults are applied, so
	// a Limited level with queues 0 admits up to its limit and rejects the
	// rest, one with an empty limitResponse.type and a queuing section
	// queues without flows, and a FlowSchema with matchingPrecedence 0
	// matches first, as upstream's controller does with objects its
	// informers deliver that skipped the API server's defaulting (fake
	// clientsets). kube/flowcontrol sets it. The zero value defaults every
	// object, as fits configuration files where an omitted field means
	// its default. With AsStored set and Lenient unset, the objects are
	// validated as given (flowschema.ValidateAsStored), so the zeros the
	// defaults would fill are refused.
	AsStored bool
	// QueueSet carries the fairqueue options every priority level's queue
	// set gets (the Fix… switches, ServiceDuration); its Name, Queues,
	// HandSize, QueueLengthLimit and ConcurrencyLimit are ignored.
	QueueSet fairqueue.Config
	// FlowLimiter, beyond upstream, measures each flow's seat-seconds and
	// holds the flows it has caps for to them (package apf/fleet sets
	// them); nil measures nothing and caps nothing. One FlowLimiter per
	// Controller.
	FlowLimiter *FlowLimiter
	// SeatPolicy, beyond upstream, decides the current limits of the
	// levels it names in every seat plan, in place of the borrowing's
	// (package apf/fleet's Coordinator is one); nil leaves every level to
	// the borrowing, as upstream.
	SeatPolicy SeatPolicy
}

// Validate reports every invalid option at once (joined with
// errors.Join), each naming its field and value: a ServerConcurrencyLimit
// that is not positive, a negative QueueSet.ServiceDuration, and what
// AdaptiveOptions refuses. New calls it; a wrapper that adds options of
// its own (kube/flowcontrol's) calls it to report its problems and these
// together.
func (o Options) Validate() error {
	var errs []error
	if o.ServerConcurrencyLimit <= 0 {
		errs = append(errs, fmt.Errorf("apf: Options.ServerConcurrencyLimit=%d must be positive", o.ServerConcurrencyLimit))
	}
	if o.QueueSet.ServiceDuration < 0 {
		errs = append(errs, fmt.Errorf("apf: Options.QueueSet.ServiceDuration=%v must not be negative", o.QueueSet.ServiceDuration))
	}
	if a := o.Adaptive; a != nil {
		if err := a.validate(o.ServerConcurrencyLimit); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
