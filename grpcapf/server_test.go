package grpcapf_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fairslice/fairslice/grpcapf"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestServerOptionsReportsEveryInvalidOptionAtOnce(t *testing.T) {
	_, err := grpcapf.ServerOptions(nil, grpcapf.Options{Streams: 7, DefaultWaitLimit: -time.Second, ServerMetrics: nopMetrics{}})
	if err == nil {
		t.Fatal("ServerOptions(nil, invalid options) = nil error")
	}
	for _, want := range []string{"apf.Controller is nil", "Options.User is required", "Options.Streams=7", "Options.DefaultWaitLimit=-1s", "Options.ServerMetrics is set"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ServerOptions error %q does not mention %q", err, want)
		}
	}
}

func TestMethodRequestInfoIsANonResourceRequestToTheMethodPath(t *testing.T) {
	for _, tc := range []struct {
		method string
		stream bool
		verb   string
	}{{checkMethod, false, "create"}, {watchMethod, true, "watch"}} {
		ri := grpcapf.MethodRequestInfo(tc.method, tc.stream)
		if ri.IsResourceRequest || ri.Path != tc.method || ri.Verb != tc.verb {
			t.Errorf("MethodRequestInfo(%q, %v) = %+v, want a non-resource %s of the method path", tc.method, tc.stream, ri, tc.verb)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = grpcapf.MethodRequestInfo(checkMethod, false) }); n != 0 {
		t.Errorf("MethodRequestInfo allocates %v times, want 0", n)
	}
}

func TestRejectedRPCIsResourceExhaustedWithRetryPushback(t *testing.T) {
	c := newController(t, 4)
	b := newBlocker()
	client := serve(t, c, grpcapf.Options{User: metadataUser}, b)
	ctx := as(t.Context(), "alice", "tenants")
	errs := make(chan error, 7)
	for range 3 {
		go func() { _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); errs <- err }()
		recv(t, b.entered, "admitted call")
	}
	for range 4 {
		go func() { _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); errs <- err }()
	}
	waitFor(t, "four calls waiting", func() bool { w, _ := counts(c); return w == 4 })
	var trailer metadata.MD
	_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("call to full queues: %v, want code ResourceExhausted", err)
	}
	if got := trailer.Get(grpcapf.HeaderRetryPushback); len(got) != 1 || got[0] != "1000" {
		t.Errorf("rejected call's %s trailer = %q, want [\"1000\"] (APF's Retry-After of 1 s)", grpcapf.HeaderRetryPushback, got)
	}
	if _, _, ok := loadReport(t, trailer); ok {
		t.Error("a load report without Options.LoadReports")
	}
	close(b.release)
	for range 7 {
		if err := recv(t, errs, "released call"); err != nil {
			t.Errorf("admitted call: %v", err)
		}
	}
}

func TestCancelledAndDeadlineExceededRPCsReleaseTheirSeats(t *testing.T) {
	c := newController(t, 4)
	b := newBlocker()
	client := serve(t, c, grpcapf.Options{User: metadataUser}, b)
	ctx, cancel := context.WithCancel(as(t.Context(), "alice", "tenants"))
	errs := make(chan error, 8)
	for range 3 {
		go func() { _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); errs <- err }()
		recv(t, b.entered, "admitted call")
	}
	go func() { _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); errs <- err }()
	waitFor(t, "one call waiting", func() bool { w, _ := counts(c); return w == 1 })
	cancel()
	for range 4 {
		if err := recv(t, errs, "cancelled call"); status.Code(err) != codes.Canceled {
			t.Errorf("cancelled call: %v, want code Canceled", err)
		}
	}
	waitFor(t, "seats and queues empty after cancel", func() bool { w, s := counts(c); return w == 0 && s == 0 })
	// The waiting call may have been dispatched as the others left, and
	// entered the handler before it saw the cancel.
	for len(b.entered) > 0 {
		<-b.entered
	}

	// A deadline: the executing call ends with it, and the one waiting
	// leaves its queue at a quarter of it (upstream's wait limit).
	dctx, dcancel := context.WithTimeout(as(t.Context(), "bob", "tenants"), 3*time.Second)
	defer dcancel()
	for range 3 {
		go func() { _, err := client.Check(dctx, &healthpb.HealthCheckRequest{}); errs <- err }()
		recv(t, b.entered, "admitted call")
	}
	_, err := client.Check(dctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("call whose wait limit passed: %v, want ResourceExhausted", err)
	}
	for range 3 {
		if err := recv(t, errs, "call past its deadline"); status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("call past its deadline: %v, want DeadlineExceeded", err)
		}
	}
	waitFor(t, "seats and queues empty after the deadline", func() bool { w, s := counts(c); return w == 0 && s == 0 })
}

func TestStreamHoldsItsSeatUntilInitializedOrForLife(t *testing.T) {
	for _, tc := range []struct {
		name    string
		streams grpcapf.StreamSeats
		service string
		held    int // seats held while the stream runs
	}{
		{"until initialized, signalled", grpcapf.StreamsUntilInitialized, "init", 0},
		{"until initialized, never signalled", grpcapf.StreamsUntilInitialized, "", 1},
		{"for life, signal ignored", grpcapf.StreamsForLife, "init", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newController(t, 4)
			b := newBlocker()
			client := serve(t, c, grpcapf.Options{User: metadataUser, Streams: tc.streams}, b)
			stream, err := client.Watch(as(t.Context(), "alice", "tenants"), &healthpb.HealthCheckRequest{Service: tc.service})
			if err != nil {
				t.Fatal(err)
			}
			recv(t, b.entered, "stream handler")
			if _, seats := counts(c); seats != tc.held {
				t.Errorf("seats held while the stream runs = %d, want %d", seats, tc.held)
			}
			close(b.release)
			if _, err := stream.Recv(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "stream's seat released at its end", func() bool { _, s := counts(c); return s == 0 })
		})
	}
}

func TestUserErrorsFailTheRPCBeforeAdmission(t *testing.T) {
	c := newController(t, 4)
	client := serve(t, c, grpcapf.Options{User: metadataUser}, newBlocker())
	_, err := client.Check(as(t.Context(), "system:masters"), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("call claiming a reserved user: %v, want PermissionDenied", err)
	}
	client = serve(t, c, grpcapf.Options{User: grpcapf.CertificateUser}, newBlocker())
	_, err = client.Check(t.Context(), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("plaintext call to a CertificateUser server: %v, want Unauthenticated", err)
	}
}

func TestClosedControllerAnswersUnavailableWithPushback(t *testing.T) {
	c := newController(t, 4)
	client := serve(t, c, grpcapf.Options{User: metadataUser}, newBlocker())
	c.Close()
	var trailer metadata.MD
	_, err := client.Check(as(t.Context(), "alice", "tenants"), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unavailable || len(trailer.Get(grpcapf.HeaderRetryPushback)) != 1 {
		t.Errorf("call after Close: %v, trailer %v; want Unavailable with %s", err, trailer, grpcapf.HeaderRetryPushback)
	}
}

func TestRPCWithoutDeadlineWaitsDefaultWaitLimit(t *testing.T) {
	c := newController(t, 4)
	b := newBlocker()
	client := serve(t, c, grpcapf.Options{User: metadataUser, DefaultWaitLimit: 100 * time.Millisecond}, b)
	ctx := as(t.Context(), "alice", "tenants")
	errs := make(chan error, 3)
	for range 3 {
		go func() { _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); errs <- err }()
		recv(t, b.entered, "admitted call")
	}
	// No deadline: it waits DefaultWaitLimit (100 ms), not apf's 15 s, and
	// is rejected while the three still hold the seats; recv gives up
	// after 10 s, before the 15 s.
	probe := make(chan error, 1)
	go func() { _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); probe <- err }()
	err := recv(t, probe, "call without a deadline, rejected after DefaultWaitLimit")
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "time-out") {
		t.Errorf("call without a deadline to a full level: %v, want ResourceExhausted (time-out)", err)
	}
	close(b.release)
	for range 3 {
		if err := recv(t, errs, "released call"); err != nil {
			t.Errorf("admitted call: %v", err)
		}
	}
}

func TestBypassedRPCsTakeNoSeat(t *testing.T) {
	c := newController(t, 4)
	b := newBlocker()
	client := serve(t, c, grpcapf.Options{User: metadataUser, Bypass: func(m string) bool { return m == checkMethod }}, b)
	done := make(chan error, 1)
	go func() {
		_, err := client.Check(as(t.Context(), "alice", "tenants"), &healthpb.HealthCheckRequest{})
		done <- err
	}()
	recv(t, b.entered, "bypassed call")
	if _, seats := counts(c); seats != 0 {
		t.Errorf("seats held by a bypassed call = %d, want 0", seats)
	}
	close(b.release)
	if err := recv(t, done, "bypassed call"); err != nil {
		t.Error(err)
	}
	if !grpcapf.DefaultBypass(grpcapf.LoadReportServiceMethod) || grpcapf.DefaultBypass(checkMethod) {
		t.Error("DefaultBypass bypasses something other than the ORCA out-of-band stream alone")
	}
}
