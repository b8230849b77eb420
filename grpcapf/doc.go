// Package grpcapf is Kubernetes API Priority and Fairness for gRPC
// servers: interceptors that classify every RPC by FlowSchema into a
// priority level and a flow, queue it fairly and admit or reject it
// through an apf.Controller, and ORCA load reports that carry the
// pressure of the RPC's priority level to the load balancers that already
// read ORCA (grpc-go's weighted_round_robin, Envoy's client-side weighted
// round robin).
//
// # Model
//
// ServerOptions returns the options to pass to grpc.NewServer. Each RPC's
// caller is read by Options.User (MetadataUser for a trusted proxy's
// metadata, CertificateUser for mTLS), its full method becomes the
// request attributes FlowSchema rules match (MethodRequestInfo: a
// non-resource request with the method as path, verb "create" for a unary
// RPC and "watch" for a stream), and it
// waits in its level's queues as an HTTP request does in apf.Handler, with
// upstream's wait limit (a quarter of the RPC's deadline, at most a
// minute; Options.DefaultWaitLimit without one). An admitted unary RPC
// holds its seat until its handler returns; a stream holds it until the
// handler calls StreamInitialized, as a watch does in upstream APF, or for
// its whole life (Options.Streams). A rejected RPC fails with
// codes.ResourceExhausted and a grpc-retry-pushback-ms trailer (gRFC A6)
// carrying APF's Retry-After; an RPC whose client cancels or whose
// deadline passes gives its seat back, waiting or executing.
//
// Admission happens in interceptors, not in a tap.ServerInHandle: a tap
// handle runs on the connection's reader goroutine, so a call waiting
// there for a seat would stall every call of the connection. Options.Bypass
// names the RPCs that skip APF (by default ORCA's out-of-band stream).
//
// # Load reports
//
// With Options.LoadReports every RPC, admitted or rejected, ends with an
// ORCA per-call load report (gRFC A51) whose application_utilization is
// the pressure of its priority level on this server (apf.Ticket.Pressure:
// seats executing plus seats waiting over the level's current limit, above
// 1 when requests queue) and whose rps_fractional is 1. The constant is
// deliberate. grpc-go's weighted_round_robin (gRFC A58) ignores a report
// without rps_fractional and weighs a server by rps_fractional /
// utilization. With 1 the weight is 1/pressure: the replica whose level
// pinned clients saturate weighs least. With the server's real call rate
// beside a utilization capped at 1, rate / utilization is by Little's law
// each server's capacity, the same on a saturated replica as on an idle
// one, and the balancer does not steer at all (measured: as round_robin).
// The real rate beside the uncapped pressure steers, but less than 1
// does. BENCHMARKS.md ("grpcapf: steering by APF pressure") has the
// measurements with three real servers, and
// docs/notes/2026-12-grpcapf-load-signal.md the reasoning.
// RegisterLoadReportService serves the same number out of band for
// clients that enable it.
//
// CPU utilization, the signal balancers default to, does not see what
// makes a replica hot for APF (a priority level whose seats pinned clients
// hold and queue for) and is the same on replicas that share hardware.
//
// # Cost
//
// The interceptors add no allocation to APF's admission path (apf.Wait
// with upstream's wait limit): BenchmarkUnaryInterceptor shows it. A stream
// admitted with StreamsUntilInitialized allocates one wrapper, so that
// its handler can signal; load reports cost what grpc-go's ORCA recorder
// allocates.
package grpcapf
