package apf

import (
	"github.com/fairslice/fairslice/fairqueue"
)

// The per-request state the controller keeps in a fairqueue.Request: the
// flow's names for Dump and the *ticket as the flow's Key.

func setFlow(r *fairqueue.Request, fs, dist string, t *ticket) {
	r.Flow = fairqueue.Flow{FlowSchema: fs, FlowDistinguisher: dist, Key: t}
}

func ticketOf(r *fairqueue.Request) *ticket { return r.Key.(*ticket) }

// requestOf returns the Request behind a dumped request, if known.
func requestOf(r *fairqueue.RequestDump) *Request {
	if t, ok := r.Key.(*ticket); ok {
		return t.req
	}
	return nil
}
