package fairqueue

import "time"

// Observer receives the events a metrics layer needs, without this package
// importing one. Every request event carries the request's flow and queue
// (RequestInfo), so per-flow and per-queue metrics need no state of their
// own.
//
// A QueueSet calls its Observer synchronously from the method that caused
// the event, in order. A Limiter records the events under its lock and
// delivers them after releasing it, in the order they happened, one call
// at a time (never concurrently), from whichever goroutine is delivering
// at the moment: possibly not the one whose call caused them, and possibly
// after that call returned. Every event of a call that returned has been
// delivered once all calls into the Limiter have returned. Embed
// NopObserver to implement only some methods.
//
// Upstream's metrics map onto the events as follows: rejected_requests_total
// {reason} counts Rejected by reason plus Cancelled as "time-out";
// dispatched_requests_total counts Dispatched; request_wait_duration_seconds
// observes Dispatched's wait; request_queue_length_after_enqueue observes
// Enqueued's length; the seat gauges follow SeatsChanged.
type Observer interface {
	// Rejected reports a request turned away on arrival, with
	// ReasonQueueFull (req.Queue is the queue that was full) or
	// ReasonConcurrencyLimit (req.Queue is -1).
	Rejected(req RequestInfo, reason Reason)
	// Cancelled reports a waiting request removed from its queue without
	// executing: expired is true when its wait limit passed
	// (QueueSet.Expire), false when its caller gave up (QueueSet.Cancel,
	// or Limiter.Close). Upstream counts both as rejected with
	// ReasonTimeOut.
	Cancelled(req RequestInfo, expired bool)
	// Enqueued reports a request entering a queue, with the number of
	// requests waiting in that queue after it (upstream's
	// request_queue_length_after_enqueue).
	Enqueued(req RequestInfo, queueLength int)
	// Dispatched reports a request starting to execute after waiting for
	// the given time (zero for a request admitted without a queue).
	Dispatched(req RequestInfo, wait time.Duration)
	// SeatsChanged reports the seats now executing (held, including final
	// phases) and waiting, after a change of either.
	SeatsChanged(executing, waiting int)
}

// NopObserver is an Observer that ignores everything. Embed it to implement
// a subset of Observer.
type NopObserver struct{}

// Rejected implements Observer.
func (NopObserver) Rejected(RequestInfo, Reason) {}

// Cancelled implements Observer.
func (NopObserver) Cancelled(RequestInfo, bool) {}

// Enqueued implements Observer.
func (NopObserver) Enqueued(RequestInfo, int) {}

// Dispatched implements Observer.
func (NopObserver) Dispatched(RequestInfo, time.Duration) {}

// SeatsChanged implements Observer.
func (NopObserver) SeatsChanged(int, int) {}

// DispatchStats is what upstream's dispatcher reports when it picks a
// queue (its SetDispatchMetrics): R at the time (dispatch_r), the picked
// queue's next dispatch R before the request's work is added (latest_s),
// and the min and max over queues with waiting requests of their next
// dispatch R (next_s_bounds) and of that minus the seat-time of their
// executing requests at the estimated service duration
// (next_discounted_s_bounds).
type DispatchStats struct {
	R, S                           SeatSeconds
	SMin, SMax                     SeatSeconds
	DiscountedSMin, DiscountedSMax SeatSeconds
}

// DispatchObserver is an optional extension of Observer: a QueueSet whose
// Observer also implements it reports, for every dispatch from a queue,
// upstream's virtual-time statistics (computing them costs O(queues) per
// dispatch, paid only then), and every dispatch attempt whose chosen
// request did not fit (upstream's request_dispatch_no_accommodation_total).
// Queueless (exempt, no-queuing) dispatches report nothing, as upstream.
type DispatchObserver interface {
	Observer
	// DispatchStats reports the statistics of the dispatch of req, called
	// just before Dispatched for it.
	DispatchStats(req RequestInfo, s DispatchStats)
	// NoAccommodation reports that req, the request the dispatcher chose,
	// does not fit in the free seats and stays waiting.
	NoAccommodation(req RequestInfo)
}
