package grpcapf

import (
	"context"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
)

// ServerOptions returns what to pass to grpc.NewServer to put c in front
// of every RPC: with opts.LoadReports, ORCA's call-metrics option first
// (its interceptor must run before the admitting one, or the report the
// admitting one records is never sent), then the unary and stream
// interceptors that admit RPCs (see the package doc). Pass them before
// other interceptors whose work APF should admit (grpc chains interceptors
// in the order of the options). It reports every invalid option at once.
func ServerOptions(c *apf.Controller, opts Options) ([]grpc.ServerOption, error) {
	if err := opts.validate(c); err != nil {
		return nil, err
	}
	s := newServer(c, opts)
	var out []grpc.ServerOption
	if opts.LoadReports {
		out = append(out, orca.CallMetricsServerOption(opts.ServerMetrics))
	}
	return append(out, grpc.ChainUnaryInterceptor(s.unary), grpc.ChainStreamInterceptor(s.stream)), nil
}

// server holds what the interceptors share; it is immutable.
type server struct {
	c    *apf.Controller
	opts Options
}

// newServer returns the interceptors' state for valid opts, defaults
// filled in.
func newServer(c *apf.Controller, opts Options) *server {
	s := &server{c: c, opts: opts}
	if s.opts.RequestInfo == nil {
		s.opts.RequestInfo = MethodRequestInfo
	}
	if s.opts.DefaultWaitLimit == 0 {
		s.opts.DefaultWaitLimit = apf.DefaultRequestWaitLimit
	}
	if s.opts.Bypass == nil {
		s.opts.Bypass = DefaultBypass
	}
	return s
}

// admit reads the RPC's caller and waits for its admission, with
// upstream's wait limit.
func (s *server) admit(ctx context.Context, fullMethod string, stream bool) (apf.Ticket, error) {
	user, err := s.opts.User(ctx, fullMethod)
	if err != nil {
		return apf.Ticket{}, userError(err)
	}
	arrived := time.Now()
	wctx, cancel := context.WithDeadline(ctx, arrived.Add(fairqueue.UpstreamWaitLimit(ctx, arrived, s.opts.DefaultWaitLimit)))
	t, err := s.c.Wait(wctx, &apf.Request{User: user, Info: s.opts.RequestInfo(fullMethod, stream)}, nil)
	cancel()
	return t, err
}

// finish ends an admitted RPC: it records the load report, then gives
// the seats back.
func (s *server) finish(ctx context.Context, t apf.Ticket) {
	if s.opts.LoadReports {
		report(ctx, t.Pressure())
	}
	s.finishTicket(ctx, t)
}

// finishTicket gives an admitted RPC's seats back, abandoned when the
// client has gone, so that the cut-short execution is no latency sample.
func (s *server) finishTicket(ctx context.Context, t apf.Ticket) {
	if ctx.Err() != nil {
		t.FinishAbandoned()
		return
	}
	t.Finish()
}

func (s *server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s.opts.Bypass(info.FullMethod) {
		return handler(ctx, req)
	}
	t, err := s.admit(ctx, info.FullMethod, false)
	if err != nil {
		return nil, s.refuse(ctx, grpc.SetTrailer, err)
	}
	defer s.finish(ctx, t)
	return handler(ctx, req)
}

func (s *server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if s.opts.Bypass(info.FullMethod) {
		return handler(srv, ss)
	}
	ctx := ss.Context()
	t, err := s.admit(ctx, info.FullMethod, true)
	if err != nil {
		return s.refuse(ctx, func(_ context.Context, md metadata.MD) error { ss.SetTrailer(md); return nil }, err)
	}
	if s.opts.Streams == StreamsForLife {
		defer s.finish(ctx, t)
		return handler(srv, ss)
	}
	as := newAdmittedStream(s, ss, t)
	defer as.end()
	return handler(srv, as)
}
