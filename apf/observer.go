package apf

import (
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// RequestEvent describes the request an Observer event is about.
type RequestEvent struct {
	// Request is the request passed to Wait (read-only).
	Request *Request
	// PriorityLevel and FlowSchema are the names the request was
	// classified to (upstream's priority_level and flow_schema labels).
	PriorityLevel, FlowSchema string
	// Seats the request holds (its work estimate's MaxSeats).
	Seats int
	// Exempt is true for a request of an exempt priority level.
	Exempt bool
	// Queued is true if the request entered a queue: Enqueued was reported
	// for it (every request of a queuing level, even one dispatched at once).
	Queued bool
	// Wait is the time from arrival to dispatch or rejection (0 in
	// Enqueued and Estimated).
	Wait time.Duration
}

// Observer receives what a metrics layer needs, labelled by priority level
// and FlowSchema as upstream's metrics are. The Controller calls it
// synchronously, in the order the events happen within each priority
// level, with that level's lock held (Estimated and LevelLimits excepted):
// an Observer must be fast and must not call back into the Controller.
// Embed NopObserver to implement a subset. Package kube/apfmetrics turns
// these events into upstream's Prometheus metrics.
type Observer interface {
	// Estimated reports the work estimate of a classified request
	// (work_estimated_seats).
	Estimated(ev RequestEvent, work fairqueue.WorkEstimate)
	// Enqueued reports a request entering a queue, with the queue's length
	// after it (current_inqueue_requests/seats,
	// request_queue_length_after_enqueue).
	Enqueued(ev RequestEvent, queueLength int)
	// Dispatched reports a request starting to execute
	// (dispatched_requests_total, current_executing_requests/seats,
	// request_wait_duration_seconds); a queued one leaves its queue.
	Dispatched(ev RequestEvent)
	// Rejected reports a request that will not execute, with the reason
	// (rejected_requests_total). A queued one (ReasonTimeOut, or ErrClosed
	// at shutdown, reported as ReasonTimeOut) leaves its queue.
	Rejected(ev RequestEvent, reason fairqueue.Reason)
	// Finished reports the end of a dispatched request's execution, which
	// took execution (request_execution_seconds,
	// current_executing_requests).
	Finished(ev RequestEvent, execution time.Duration)
	// SeatsReleased reports that a finished request gave back its seats:
	// at Finished, or after its final phase (current_executing_seats).
	SeatsReleased(ev RequestEvent)
	// LevelLimits reports a priority level's limits after a configuration
	// change or an adjustment, with the controller's lock held.
	LevelLimits(pl string, limits Limits)
	// LevelRemoved reports that a priority level is gone (after quiescing).
	LevelRemoved(pl string)
}

// NopObserver ignores every event.
type NopObserver struct{}

// Estimated implements Observer.
func (NopObserver) Estimated(RequestEvent, fairqueue.WorkEstimate) {}

// Enqueued implements Observer.
func (NopObserver) Enqueued(RequestEvent, int) {}

// Dispatched implements Observer.
func (NopObserver) Dispatched(RequestEvent) {}

// Rejected implements Observer.
func (NopObserver) Rejected(RequestEvent, fairqueue.Reason) {}

// Finished implements Observer.
func (NopObserver) Finished(RequestEvent, time.Duration) {}

// SeatsReleased implements Observer.
func (NopObserver) SeatsReleased(RequestEvent) {}

// LevelLimits implements Observer.
func (NopObserver) LevelLimits(string, Limits) {}

// LevelRemoved implements Observer.
func (NopObserver) LevelRemoved(string) {}

// DispatchObserver is an optional extension of Observer: a Controller whose
// Observer also implements it reports upstream's dispatch-time virtual-time
// statistics (dispatch_r, latest_s, next_s_bounds,
// next_discounted_s_bounds) and dispatch attempts that found too few free
// seats (request_dispatch_no_accommodation_total), with the level's lock
// held. Computing the statistics costs O(queues) per dispatch from a queue;
// only a DispatchObserver pays it. Existing Observers are unaffected.
type DispatchObserver interface {
	Observer
	// DispatchStats reports the statistics of a dispatch from a queue of
	// priority level pl, just before Dispatched for the request.
	DispatchStats(pl string, s fairqueue.DispatchStats)
	// NoAccommodation reports that the request chosen for dispatch does not
	// fit in the free seats of its level and stays waiting.
	NoAccommodation(ev RequestEvent)
}

// WatchCountObserver is an optional extension of Observer that receives
// the number of watches a mutating request's work estimate counted
// (upstream's watch_count_samples), through Controller.ObserveWatchCount.
type WatchCountObserver interface {
	Observer
	// WatchCount reports that the work estimate of a request classified
	// to priority level pl and FlowSchema fs counted watches watches.
	WatchCount(pl, fs string, watches int)
}
