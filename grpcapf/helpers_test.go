package grpcapf_test

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"testing"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/grpcapf"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"
)

// testConfig: one queuing level "work" (4 queues, hand 2, queue length 2)
// for the group "tenants", one flow per user. At a server limit of 4 it
// gets 3 seats.
const testConfig = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: work}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse:
      type: Queue
      queuing: {queues: 4, handSize: 2, queueLengthLimit: 2}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tenants}
spec:
  priorityLevelConfiguration: {name: work}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: tenants}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["/grpc.health.v1.Health/*"]}]
`

const (
	checkMethod = "/grpc.health.v1.Health/Check"
	watchMethod = "/grpc.health.v1.Health/Watch"
)

func newController(t testing.TB, serverCL int) *apf.Controller {
	t.Helper()
	cfg, err := flowschema.Decode([]byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	c, err := apf.New(cfg, apf.Options{ServerConcurrencyLimit: serverCL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// blocker is a Health server whose calls hold until released or their
// context ends. A Watch of service "init" signals StreamInitialized first.
type blocker struct {
	healthpb.UnimplementedHealthServer
	entered chan string
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan string, 64), release: make(chan struct{})}
}

func (b *blocker) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	b.entered <- req.Service
	select {
	case <-b.release:
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *blocker) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	if req.Service == "init" {
		grpcapf.StreamInitialized(stream.Context())
	}
	b.entered <- req.Service
	select {
	case <-b.release:
		return stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
	case <-stream.Context().Done():
		return stream.Context().Err()
	}
}

// serve starts a server with opts' interceptors in front of b on an
// in-memory listener and returns a client of it; both stop at cleanup.
func serve(t testing.TB, c *apf.Controller, opts grpcapf.Options, b healthpb.HealthServer) healthpb.HealthClient {
	t.Helper()
	return healthpb.NewHealthClient(serveWith(t, c, opts, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, b) }))
}

// serveWith is serve with the services register registers, returning the
// client connection.
func serveWith(t testing.TB, c *apf.Controller, opts grpcapf.Options, register func(*grpc.Server)) *grpc.ClientConn {
	t.Helper()
	sopts, err := grpcapf.ServerOptions(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(sopts...)
	register(s)
	lis := bufconn.Listen(1 << 20)
	go s.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); s.Stop() })
	return conn
}

// as returns ctx carrying the metadata MetadataUser("x-user", "x-group")
// reads.
func as(ctx context.Context, user string, groups ...string) context.Context {
	kv := []string{"x-user", user}
	for _, g := range groups {
		kv = append(kv, "x-group", g)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

var metadataUser = grpcapf.MetadataUser("x-user", "x-group")

// loadReport decodes the application_utilization (field 9) and
// rps_fractional (field 6) of the ORCA report in trailer md, and whether
// there is one. It reads the protobuf wire format directly.
func loadReport(t testing.TB, md metadata.MD) (utilization, rps float64, ok bool) {
	t.Helper()
	r, ok := loadReportFields(t, md)
	return r[9], r[6], ok
}

// loadReportFields decodes the double fields of the ORCA report in
// trailer md, by field number.
func loadReportFields(t testing.TB, md metadata.MD) (map[uint64]float64, bool) {
	t.Helper()
	v := md.Get("endpoint-load-metrics-bin")
	if len(v) == 0 {
		return nil, false
	}
	fields := map[uint64]float64{}
	b := []byte(v[0])
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatalf("bad load report %x", v[0])
		}
		b = b[n:]
		switch key & 7 {
		case 0:
			_, n = binary.Uvarint(b)
			b = b[n:]
		case 1:
			fields[key>>3] = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			b = b[n+int(l):]
		case 5:
			b = b[4:]
		default:
			t.Fatalf("bad wire type in load report %x", v[0])
		}
	}
	return fields, true
}

// waitFor polls cond for up to 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// recv receives from ch, failing the test after 10 s.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing within 10s", what)
		panic("unreachable")
	}
}

// counts returns the "work" level's queue-set counts.
func counts(c *apf.Controller) (waiting, seatsInUse int) {
	for _, st := range c.Stats() {
		if st.Name == "work" {
			return st.Counts.Waiting, st.Counts.SeatsInUse
		}
	}
	return -1, -1
}

// incoming returns a server-side context with the metadata
// MetadataUser("x-user", "x-group") reads.
func incoming(user string, groups ...string) context.Context {
	md := metadata.Pairs("x-user", user)
	for _, g := range groups {
		md.Append("x-group", g)
	}
	return metadata.NewIncomingContext(context.Background(), md)
}
