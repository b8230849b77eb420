package apf

import (
	"errors"

	"github.com/fairslice/fairslice/fairqueue"
)

// The accessors of the per-request state the controller keeps in a
// fairqueue.Request.

func setFlow(r *fairqueue.Request, fs, dist string, t *Ticket) {
	r.FlowSchema, r.FlowDistinguisher, r.Value = fs, dist, t
}

func ticketOf(r *fairqueue.Request) *Ticket { return r.Value.(*Ticket) }

// requestOf returns the Request behind a dumped request, if known.
func requestOf(*fairqueue.RequestDump) *Request { return nil }

func validateWork(we fairqueue.WorkEstimate) error {
	if we.InitialSeats == 0 {
		return errors.New("InitialSeats=0 must be at least 1")
	}
	return nil
}
