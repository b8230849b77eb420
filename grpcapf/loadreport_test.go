package grpcapf_test

import (
	"testing"

	"github.com/fairslice/fairslice/grpcapf"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
)

// nopMetrics is a ServerMetricsProvider with a CPU utilization only.
type nopMetrics struct{}

func (nopMetrics) ServerMetrics() *orca.ServerMetrics {
	return &orca.ServerMetrics{CPUUtilization: 0.25, MemUtilization: -1, AppUtilization: -1, QPS: -1, EPS: -1,
		Utilization: map[string]float64{}, RequestCost: map[string]float64{}, NamedMetrics: map[string]float64{}}
}

func TestLoadReportsCarryTheLevelsPressureWithRateOne(t *testing.T) {
	c := newController(t, 4) // work: 3 seats
	b := newBlocker()
	client := serve(t, c, grpcapf.Options{User: metadataUser, LoadReports: true, ServerMetrics: nopMetrics{}}, b)
	ctx := as(t.Context(), "alice", "tenants")
	trailers := make(chan metadata.MD, 7)
	for range 3 {
		go func() {
			var md metadata.MD
			client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&md))
			trailers <- md
		}()
		recv(t, b.entered, "admitted call")
	}
	for range 4 {
		go func() {
			var md metadata.MD
			client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&md))
			trailers <- md
		}()
	}
	waitFor(t, "four calls waiting", func() bool { w, _ := counts(c); return w == 4 })
	var md metadata.MD
	client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&md))
	u, rps, ok := loadReport(t, md)
	if !ok || u != 7.0/3 || rps != 1 {
		t.Errorf("rejected call's load report = %v, %v, %v; want utilization 7/3 (3 seats held + 4 waiting over 3), rps 1", u, rps, ok)
	}
	if fields, _ := loadReportFields(t, md); fields[1] != 0.25 {
		t.Errorf("rejected call's load report cpu_utilization = %v, want Options.ServerMetrics' 0.25", fields[1])
	}
	close(b.release)
	// The first to finish saw 3 held and up to 4 waiting: above 1.
	highest := 0.0
	for range 7 {
		u, rps, ok := loadReport(t, recv(t, trailers, "finished call"))
		if !ok || rps != 1 || u <= 0 {
			t.Errorf("admitted call's load report = %v, %v, %v; want a positive utilization, rps 1", u, rps, ok)
		}
		highest = max(highest, u)
	}
	if highest <= 1 {
		t.Errorf("highest utilization reported while calls queued = %v, want above 1", highest)
	}
	// A stream's report, sent when it ends, while it holds its seat.
	stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	stream.Recv()
	if _, err := stream.Recv(); err == nil {
		t.Fatal("stream did not end")
	}
	if u, rps, ok := loadReport(t, stream.Trailer()); !ok || u != 1.0/3 || rps != 1 {
		t.Errorf("stream's load report = %v, %v, %v; want utilization 1/3 (its own seat), rps 1", u, rps, ok)
	}
}

func TestNoLoadReportsWithoutTheOption(t *testing.T) {
	c := newController(t, 4)
	b := newBlocker()
	close(b.release)
	b.entered = make(chan string, 1)
	client := serve(t, c, grpcapf.Options{User: metadataUser}, b)
	var md metadata.MD
	if _, err := client.Check(as(t.Context(), "alice", "tenants"), &healthpb.HealthCheckRequest{}, grpc.Trailer(&md)); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := loadReport(t, md); ok {
		t.Errorf("load report sent without Options.LoadReports: %v", md)
	}
}

func TestStreamReleasedAtInitializationReportsTheLevelsPressureAtItsEnd(t *testing.T) {
	c := newController(t, 4) // work: 3 seats
	b := newBlocker()
	client := serve(t, c, grpcapf.Options{User: metadataUser, LoadReports: true}, b)
	ctx := as(t.Context(), "alice", "tenants")
	done := make(chan error, 1)
	go func() { _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); done <- err }()
	recv(t, b.entered, "unary call holding a seat")
	stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: "init"})
	if err != nil {
		t.Fatal(err)
	}
	recv(t, b.entered, "stream, initialized")
	if _, seats := counts(c); seats != 1 {
		t.Fatalf("seats held with the stream initialized = %d, want 1 (the unary call's)", seats)
	}
	close(b.release)
	if err := recv(t, done, "unary call"); err != nil {
		t.Fatal(err)
	}
	// Sent when the stream ends, from the level (its ticket is finished:
	// reading it would panic). The unary call may have ended first, leaving
	// the level idle and the report empty; if any, it is at most the unary
	// call's third.
	stream.Recv()
	if _, err := stream.Recv(); err == nil {
		t.Fatal("stream did not end")
	}
	if u, _, ok := loadReport(t, stream.Trailer()); ok && u > 1.0/3 {
		t.Errorf("released stream's report = %v, want at most 1/3 (it holds no seat)", u)
	}
}
