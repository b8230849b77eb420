package apf

import (
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// admissionHook is what a feature beyond upstream does on a request's
// path. The controller calls its one hook (Controller.hook) at these
// points, and nothing else of any feature; Options.FlowLimiter and
// Options.Adaptive implement it, hookChain runs both, nopHook is neither.
type admissionHook interface {
	// arrived is called with the level's lock held, before the request
	// enters the queue set. admitLet hands it on to the queue set;
	// admitRefuse refuses it (concurrency-limit); admitHold leaves it
	// waiting with the hook, which later hands it to the queue set
	// (level.enter) or rejects it (level.rejectHeld), or gives it up to
	// withdraw. After anything but admitLet no later hook of a chain
	// sees the request's arrival.
	arrived(t *ticket, now time.Time) admission
	// withdraw is called with the level's lock held when the waiter of t
	// gives up (its context ended, or Close); true if the hook held t,
	// and no longer does: t then never entered the queue set, and the
	// hook has ended its accounting.
	withdraw(t *ticket, now time.Time) bool
	// waiting is called with the level's lock held when the request
	// entered a queue to wait.
	waiting(t *ticket)
	// dispatching is called with the level's lock held as the queue set
	// dispatches the request; false refuses it there (the level finishes
	// it at once and it is rejected with concurrency-limit), and no later
	// hook of a chain sees it.
	dispatching(t *ticket) bool
	// rejected is called with the level's lock held when a request that
	// arrived let through is rejected: by the queue set at arrival, or
	// with time-out while it waited.
	rejected(t *ticket, now time.Time, reason fairqueue.Reason)
	// finished is called with the level's lock held when an executing
	// request finishes at now; sample is false for FinishAbandoned.
	finished(t *ticket, now time.Time, sample bool)
	// between is called without locks before a request is classified
	// and after one finished.
	between()
}

// admission is an admission hook's decision at a request's arrival.
type admission int

const (
	admitLet    admission = iota // on to the queue set
	admitRefuse                  // rejected at once (concurrency-limit)
	admitHold                    // waits with the hook
)

// newHook is the hook of a controller with these features (either may be
// nil).
func newHook(flows *FlowLimiter, adapt *adaptive) admissionHook {
	var chain hookChain
	if flows != nil {
		chain = append(chain, flows)
	}
	if adapt != nil {
		chain = append(chain, adapt)
	}
	switch len(chain) {
	case 0:
		return nopHook{}
	case 1:
		return chain[0]
	}
	return chain
}

// nopHook is the hook of a controller with no feature beyond upstream.
type nopHook struct{}

func (nopHook) arrived(*ticket, time.Time) admission          { return admitLet }
func (nopHook) withdraw(*ticket, time.Time) bool              { return false }
func (nopHook) waiting(*ticket)                               {}
func (nopHook) dispatching(*ticket) bool                      { return true }
func (nopHook) rejected(*ticket, time.Time, fairqueue.Reason) {}
func (nopHook) finished(*ticket, time.Time, bool)             {}
func (nopHook) between()                                      {}

// hookChain runs several hooks in order.
type hookChain []admissionHook

func (hc hookChain) arrived(t *ticket, now time.Time) admission {
	for _, h := range hc {
		if a := h.arrived(t, now); a != admitLet {
			return a
		}
	}
	return admitLet
}

func (hc hookChain) withdraw(t *ticket, now time.Time) bool {
	for _, h := range hc {
		if h.withdraw(t, now) {
			return true
		}
	}
	return false
}

func (hc hookChain) waiting(t *ticket) {
	for _, h := range hc {
		h.waiting(t)
	}
}

func (hc hookChain) dispatching(t *ticket) bool {
	for _, h := range hc {
		if !h.dispatching(t) {
			return false
		}
	}
	return true
}

func (hc hookChain) rejected(t *ticket, now time.Time, reason fairqueue.Reason) {
	for _, h := range hc {
		h.rejected(t, now, reason)
	}
}

func (hc hookChain) finished(t *ticket, now time.Time, sample bool) {
	for _, h := range hc {
		h.finished(t, now, sample)
	}
}

func (hc hookChain) between() {
	for _, h := range hc {
		h.between()
	}
}
