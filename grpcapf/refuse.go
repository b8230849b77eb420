package grpcapf

import (
	"context"
	"errors"
	"strconv"

	"github.com/fairslice/fairslice/apf"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// HeaderRetryPushback is the trailer in which a server tells a retrying
// gRPC client how long to wait, in milliseconds (gRFC A6).
const HeaderRetryPushback = "grpc-retry-pushback-ms"

// refuse turns an admission error into the RPC's error, setting the
// trailers with setTrailer: an APF rejection is codes.ResourceExhausted with
// HeaderRetryPushback at APF's Retry-After, and the load report of the
// level it was rejected by; a controller that is shutting down is
// codes.Unavailable with its Retry-After; an RPC whose client went away
// while it waited ends with its context's code; a UserFunc's error is
// already a status.
func (s *server) refuse(ctx context.Context, setTrailer func(context.Context, metadata.MD) error, err error) error {
	var rej *apf.RejectedError
	var closed *apf.ClosedError
	switch {
	case errors.As(err, &rej):
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		if s.opts.LoadReports {
			p, _ := s.c.LevelPressure(rej.Classification.PriorityLevel)
			report(ctx, p)
		}
		_ = setTrailer(ctx, metadata.Pairs(HeaderRetryPushback, strconv.FormatInt(rej.RetryAfter*1000, 10)))
		return status.Errorf(codes.ResourceExhausted, "too many requests, please try again later (priority level %q: %s)", rej.Classification.PriorityLevel, rej.Reason)
	case errors.As(err, &closed):
		_ = setTrailer(ctx, metadata.Pairs(HeaderRetryPushback, strconv.FormatInt(closed.RetryAfter*1000, 10)))
		return status.Error(codes.Unavailable, "the server is shutting down, please try again later")
	case status.Code(err) != codes.Unknown:
		return err
	default:
		return status.Error(codes.Internal, err.Error())
	}
}

// userError gives a UserFunc's error a status: its own, or
// codes.Unauthenticated.
func userError(err error) error {
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return err
	}
	return status.Error(codes.Unauthenticated, "grpcapf: "+err.Error())
}
