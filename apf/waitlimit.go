package apf

import (
	"context"
	"time"
)

// DefaultRequestWaitLimit is how long a request without a deadline may
// wait in its queue: upstream's default request timeout (60 s) divided by 4.
const DefaultRequestWaitLimit = 15 * time.Second

// MaxRequestWaitLimit caps every wait limit.
const MaxRequestWaitLimit = time.Minute

// WaitLimit returns how long a request that arrived at arrived may wait in
// its queue, as upstream's filter computes it: a quarter of the time from
// arrival to the request's deadline if it has one (hasDeadline), else
// def; at most one minute. The result is negative if the deadline is
// before arrival.
func WaitLimit(arrived, deadline time.Time, hasDeadline bool, def time.Duration) time.Duration {
	limit := def
	if hasDeadline {
		limit = deadline.Sub(arrived) / 4
	}
	return min(limit, MaxRequestWaitLimit)
}

// waitContext returns the context a request waits in: ctx with a deadline
// at arrived plus its wait limit. An already ended ctx is returned as is.
func waitContext(ctx context.Context, arrived time.Time, def time.Duration) (context.Context, context.CancelFunc) {
	if ctx.Err() != nil {
		return ctx, func() {}
	}
	deadline, ok := ctx.Deadline()
	return context.WithDeadline(ctx, arrived.Add(WaitLimit(arrived, deadline, ok, def)))
}
