package grpcapf_test

import (
	"fmt"
	"testing"

	"github.com/fairslice/fairslice/grpcapf"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// rawCodec sends and receives messages as their wire bytes, so that the
// test reads ORCA's messages without their generated types.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.(*[]byte); ok {
		return *b, nil
	}
	return nil, fmt.Errorf("rawCodec: %T", v)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

func TestOutOfBandServiceReportsThePressureWithoutTakingASeat(t *testing.T) {
	c := newController(t, 4) // work: 3 seats
	b := newBlocker()
	conn := serveWith(t, c, grpcapf.Options{User: metadataUser}, func(s *grpc.Server) {
		healthpb.RegisterHealthServer(s, b)
		if err := grpcapf.RegisterLoadReportService(s, c, grpcapf.LoadReportServiceOptions{PriorityLevels: []string{"work"}}); err != nil {
			t.Fatal(err)
		}
	})
	ctx := as(t.Context(), "alice", "tenants")
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			errs <- err
		}()
		recv(t, b.entered, "admitted call")
	}
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, grpcapf.LoadReportServiceMethod, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(&[]byte{}); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var msg []byte
	if err := stream.RecvMsg(&msg); err != nil {
		t.Fatalf("first out-of-band report: %v", err)
	}
	u, rps, ok := loadReport(t, metadata.Pairs("endpoint-load-metrics-bin", string(msg)))
	if !ok || u != 2.0/3 || rps != 1 {
		t.Errorf("out-of-band report: utilization %v, rps %v; want 2/3 (2 of 3 seats held), 1", u, rps)
	}
	seats := 0
	for _, st := range c.Stats() {
		seats += st.Counts.SeatsInUse
	}
	if seats != 2 {
		t.Errorf("seats held in all levels with the report stream open = %d, want 2 (the stream bypasses APF)", seats)
	}
	close(b.release)
	for range 2 {
		if err := recv(t, errs, "released call"); err != nil {
			t.Errorf("admitted call: %v", err)
		}
	}
}
