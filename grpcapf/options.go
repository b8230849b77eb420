package grpcapf

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fairslice/fairslice/apf"
	"google.golang.org/grpc/orca"
)

// UserFunc reads the caller of an RPC from its context (metadata, peer)
// and full method ("/package.Service/Method"). An error fails the RPC
// before admission: with its gRPC status if it carries one, else with
// codes.Unauthenticated.
type UserFunc func(ctx context.Context, fullMethod string) (apf.User, error)

// RequestInfoFunc derives the request attributes FlowSchema rules match
// from an RPC's full method and whether it is a stream;
// MethodRequestInfo is the default.
type RequestInfoFunc func(fullMethod string, stream bool) apf.RequestInfo

// StreamSeats says how long an admitted stream holds its seat.
type StreamSeats int

const (
	// StreamsUntilInitialized, the zero value, holds a stream's seat until
	// its handler calls StreamInitialized with the stream's context (or
	// returns), as upstream APF holds a watch's seats until the watch has
	// sent its initial events: a long-lived stream then takes a seat only
	// while it does its initial work, not for its life.
	StreamsUntilInitialized StreamSeats = iota
	// StreamsForLife holds a stream's seat until its handler returns, as
	// a unary RPC's; StreamInitialized does nothing. Each open stream then
	// takes one seat of its level for as long as it is open.
	StreamsForLife
)

// Options configure ServerOptions.
type Options struct {
	// User reads an RPC's caller. Required: MetadataUser behind a proxy
	// that authenticates and sets the metadata, CertificateUser for a
	// server that verifies client certificates.
	User UserFunc
	// RequestInfo maps a full method to the request attributes; nil is
	// MethodRequestInfo.
	RequestInfo RequestInfoFunc
	// LoadReports sends an ORCA per-call load report with every RPC
	// (see the package doc, "Load reports"); false sends none.
	LoadReports bool
	// ServerMetrics, with LoadReports, supplies server-wide metrics
	// (CPU, memory, named ones) that each per-call report carries beside
	// the APF pressure; nil supplies none. Do not also pass
	// orca.CallMetricsServerOption to grpc.NewServer: ServerOptions
	// includes it.
	ServerMetrics orca.ServerMetricsProvider
	// Streams says how long a stream holds its seat; the zero value is
	// StreamsUntilInitialized.
	Streams StreamSeats
	// Bypass reports the RPCs that skip APF altogether (no admission, no
	// seat, no load report), as upstream lets long-running requests other
	// than watches bypass it. nil bypasses the ORCA out-of-band service
	// (LoadReportServiceMethod) only: a balancer's report stream lives as
	// long as its connection, and must not wait for a seat when the server
	// is saturated, which is when its reports matter. A stream that never
	// calls StreamInitialized, such as the standard health service's
	// Watch, holds a seat for its life: bypass it, or give it a level
	// sized for it.
	Bypass func(fullMethod string) bool
	// DefaultWaitLimit is how long an RPC without a deadline may wait in
	// its queue; zero is apf.DefaultRequestWaitLimit (15 s). An RPC with
	// a deadline may wait a quarter of the time left, at most a minute,
	// as upstream's filter lets a request wait.
	DefaultWaitLimit time.Duration
}

func (o *Options) validate(c *apf.Controller) error {
	var errs []error
	if c == nil {
		errs = append(errs, errors.New("grpcapf: the apf.Controller is nil"))
	}
	if o.User == nil {
		errs = append(errs, errors.New("grpcapf: Options.User is required"))
	}
	if o.Streams != StreamsUntilInitialized && o.Streams != StreamsForLife {
		errs = append(errs, fmt.Errorf("grpcapf: Options.Streams=%d is not StreamsUntilInitialized or StreamsForLife", o.Streams))
	}
	if o.DefaultWaitLimit < 0 {
		errs = append(errs, fmt.Errorf("grpcapf: Options.DefaultWaitLimit=%v must not be negative", o.DefaultWaitLimit))
	}
	if o.ServerMetrics != nil && !o.LoadReports {
		errs = append(errs, errors.New("grpcapf: Options.ServerMetrics is set but Options.LoadReports is not: nothing would send them"))
	}
	return errors.Join(errs...)
}

// LoadReportServiceMethod is the full method of ORCA's out-of-band load
// report stream, which RegisterLoadReportService serves.
const LoadReportServiceMethod = "/xds.service.orca.v3.OpenRcaService/StreamCoreMetrics"

// DefaultBypass is the Bypass of a nil Options.Bypass: it bypasses the
// ORCA out-of-band service only.
func DefaultBypass(fullMethod string) bool { return fullMethod == LoadReportServiceMethod }

// MethodRequestInfo maps an RPC to the attributes of a non-resource
// request: Path is the full method ("/package.Service/Method"), and Verb is
// "create" for a unary RPC (a POST, which Kubernetes calls create) and
// "watch" for a stream (which holds its seat as a watch does, see
// StreamSeats). A FlowSchema matches RPCs with nonResourceRules:
// nonResourceURLs ["/package.Service/*"] takes every method of a service,
// ["/package.Service/Method"] one method, and verbs ["*"] both kinds (a
// FlowSchema's verbs are Kubernetes verbs, so not "post"). Resource rules
// match no RPC. It allocates nothing.
func MethodRequestInfo(fullMethod string, stream bool) apf.RequestInfo {
	if stream {
		return apf.RequestInfo{Path: fullMethod, Verb: "watch"}
	}
	return apf.RequestInfo{Path: fullMethod, Verb: "create"}
}
