package apf

import (
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// Observer receives what a metrics layer needs, labelled by priority level
// (pl) and FlowSchema (fs) as upstream's metrics are. The Controller calls
// it synchronously, in the order the events happen in each priority level,
// with that level's lock held: an Observer must be fast and must not call
// back into the Controller. Embed NopObserver to implement a subset.
// Package kube/apfmetrics turns these into upstream's Prometheus metrics.
type Observer interface {
	// Estimated reports the work estimate of a classified request
	// (work_estimated_seats).
	Estimated(pl, fs string, work fairqueue.WorkEstimate)
	// Enqueued reports a request entering a queue, with its seats and the
	// queue's length after it (current_inqueue_requests/seats,
	// request_queue_length_after_enqueue).
	Enqueued(pl, fs string, seats, queueLength int)
	// Dispatched reports a request starting to execute, holding seats. If
	// it waited in a queue, queued is true and wait is how long.
	Dispatched(pl, fs string, seats int, queued bool, wait time.Duration)
	// Rejected reports a request that will not execute, with the reason.
	// A request removed from its queue (ReasonTimeOut) has queued true and
	// the time it waited; its seats were counted by Enqueued.
	Rejected(pl, fs string, reason fairqueue.Reason, seats int, queued bool, wait time.Duration)
	// Finished reports the end of a request's execution, after execution.
	Finished(pl, fs string, execution time.Duration)
	// SeatsReleased reports seats given back by a finished request (at
	// Finished, or after its final phase).
	SeatsReleased(pl, fs string, seats int)
	// LevelLimits reports a priority level's limits after a configuration
	// change or an adjustment.
	LevelLimits(pl string, limits Limits)
	// LevelRemoved reports that a priority level is gone (after quiescing).
	LevelRemoved(pl string)
}

// NopObserver ignores every event.
type NopObserver struct{}

// Estimated implements Observer.
func (NopObserver) Estimated(string, string, fairqueue.WorkEstimate) {}

// Enqueued implements Observer.
func (NopObserver) Enqueued(string, string, int, int) {}

// Dispatched implements Observer.
func (NopObserver) Dispatched(string, string, int, bool, time.Duration) {}

// Rejected implements Observer.
func (NopObserver) Rejected(string, string, fairqueue.Reason, int, bool, time.Duration) {}

// Finished implements Observer.
func (NopObserver) Finished(string, string, time.Duration) {}

// SeatsReleased implements Observer.
func (NopObserver) SeatsReleased(string, string, int) {}

// LevelLimits implements Observer.
func (NopObserver) LevelLimits(string, Limits) {}

// LevelRemoved implements Observer.
func (NopObserver) LevelRemoved(string) {}
