package apf

import (
	"github.com/fairslice/fairslice/fairqueue"
)

// The per-request state the controller keeps in a fairqueue.Request: the
// flow's names for Dump and the *Ticket as the flow's Key.

func setFlow(r *fairqueue.Request, fs, dist string, t *Ticket) {
	r.Flow = fairqueue.Flow{FlowSchema: fs, FlowDistinguisher: dist, Key: t}
}

func ticketOf(r *fairqueue.Request) *Ticket { return r.Key.(*Ticket) }

// requestOf returns the Request behind a dumped request, if known.
func requestOf(r *fairqueue.RequestDump) *Request {
	if t, ok := r.Key.(*Ticket); ok {
		return t.req
	}
	return nil
}
