package grpcapf

import (
	"context"
	"sync"

	"github.com/fairslice/fairslice/apf"
	"google.golang.org/grpc"
)

// StreamInitialized tells the interceptor that the stream served with ctx
// (its context, or one derived from it) has done its initial work: its
// seat is given back while the stream goes on, as upstream APF releases a
// watch's seats once the watch has sent its initial events. It does
// nothing with Options.Streams = StreamsForLife, for a unary RPC, for an
// RPC the interceptor did not admit, and the second time. Safe to call
// from any goroutine.
func StreamInitialized(ctx context.Context) {
	if as, ok := ctx.Value(streamKey{}).(*admittedStream); ok {
		as.release()
	}
}

type streamKey struct{}

// admittedStream is a stream admitted with StreamsUntilInitialized: its
// context leads StreamInitialized to it.
type admittedStream struct {
	grpc.ServerStream
	ctx   streamContext
	s     *server
	level string // the ticket's priority level, for the report after release

	mu       sync.Mutex
	t        apf.Ticket
	released bool
}

// streamContext is the stream's context with the admittedStream under
// streamKey, in the same allocation as the stream.
type streamContext struct {
	context.Context
	as *admittedStream
}

func (c *streamContext) Value(key any) any {
	if key == (streamKey{}) {
		return c.as
	}
	return c.Context.Value(key)
}

func newAdmittedStream(s *server, ss grpc.ServerStream, t apf.Ticket) *admittedStream {
	as := &admittedStream{ServerStream: ss, s: s, t: t, level: t.Classification().PriorityLevel}
	as.ctx = streamContext{Context: ss.Context(), as: as}
	return as
}

// Context returns the stream's context, which StreamInitialized accepts.
func (as *admittedStream) Context() context.Context { return &as.ctx }

// release gives the seat back, once.
func (as *admittedStream) release() {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.released {
		return
	}
	as.released = true
	as.s.finishTicket(as.ctx.Context, as.t)
}

// end runs when the handler returns: it records the load report (the
// level's pressure now) and releases the seat if the stream still holds it.
func (as *admittedStream) end() {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.s.opts.LoadReports {
		if as.released {
			p, _ := as.s.c.LevelPressure(as.level)
			report(as.ctx.Context, p)
		} else {
			report(as.ctx.Context, as.t.Pressure())
		}
	}
	if !as.released {
		as.released = true
		as.s.finishTicket(as.ctx.Context, as.t)
	}
}
