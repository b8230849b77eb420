package fairqueue

import "time"

// Observer receives the events a metrics layer needs, without this package
// importing one. A QueueSet calls it synchronously from the method that
// caused the event; a Limiter buffers the events and calls its Observer
// after releasing its lock. Embed NopObserver to implement only some methods.
type Observer interface {
	// Rejected reports a request that will not execute, with the reason
	// (ReasonTimeOut for a request cancelled while waiting).
	Rejected(reason Reason)
	// Enqueued reports a request entering a queue, with the number of
	// requests waiting in that queue after it (upstream's
	// request_queue_length_after_enqueue).
	Enqueued(queueLength int)
	// Dispatched reports a request starting to execute after waiting for
	// the given time (zero for a request admitted without a queue).
	Dispatched(wait time.Duration)
	// SeatsChanged reports the seats now executing (held, including final
	// phases) and waiting, after a change of either.
	SeatsChanged(executing, waiting int)
}

// NopObserver is an Observer that ignores everything. Embed it to implement
// a subset of Observer.
type NopObserver struct{}

// Rejected implements Observer.
func (NopObserver) Rejected(Reason) {}

// Enqueued implements Observer.
func (NopObserver) Enqueued(int) {}

// Dispatched implements Observer.
func (NopObserver) Dispatched(time.Duration) {}

// SeatsChanged implements Observer.
func (NopObserver) SeatsChanged(int, int) {}
