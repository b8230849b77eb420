package apf

import (
	"context"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// DefaultRequestWaitLimit is how long a request without a deadline may
// wait in its queue: upstream's default request timeout (60 s) divided by 4.
const DefaultRequestWaitLimit = fairqueue.DefaultWaitLimit

// waitContext returns the context a request that arrived at arrived waits
// in: ctx with the deadline upstream's filter gives it (a quarter of the
// time to ctx's deadline, or def without one; at most one minute: see
// fairqueue.UpstreamWaitLimit). An already ended ctx is returned as is.
func waitContext(ctx context.Context, arrived time.Time, def time.Duration) (context.Context, context.CancelFunc) {
	if ctx.Err() != nil {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, arrived.Add(fairqueue.UpstreamWaitLimit(ctx, arrived, def)))
}
