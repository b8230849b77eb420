package grpcapf_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/grpcapf"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/balancer/weightedroundrobin" // registers weighted_round_robin
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// The proof's setup: three servers, each with proofSeats seats for the
// tenants' level and calls that take proofService; proofHeavy users
// pinned to server 0 with proofHeavyWorkers calls in flight each; one
// tenant whose proofTenantWorkers calls in flight spread over the three
// through one ClientConn. Each client waits proofBackoff after a failed
// call, and every call has a deadline of proofDeadline (so it may wait a
// quarter of that in a queue).
const (
	proofSeats         = 10
	proofService       = 100 * time.Millisecond
	proofHeavy         = 6
	proofHeavyWorkers  = 4
	proofTenantWorkers = 10
	proofBackoff       = proofService
	proofDeadline      = 2 * time.Second
	proofWarmup        = 3 * time.Second
	proofMeasure       = 8 * time.Second
)

// proofConfig gives the level "tenants" fixed seats (nothing to lend or
// borrow) and one flow per user: with serverConcurrencyLimit 10 its share
// (100 of 105) is 10 seats.
const proofConfig = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tenants}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse:
      type: Queue
      queuing: {queues: 64, handSize: 2, queueLengthLimit: 10}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tenants}
spec:
  priorityLevelConfiguration: {name: tenants}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: tenants}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`

// worker is a Health server whose Check takes proofService.
type worker struct {
	healthpb.UnimplementedHealthServer
}

func (worker) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	t := time.NewTimer(proofService)
	defer t.Stop()
	select {
	case <-t.C:
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// signal is what the servers of an arm report.
type signal int

const (
	signalNone       signal = iota // no load reports
	signalPressure                 // grpcapf's: APF pressure, rps_fractional 1
	signalRateCapped               // an alternative: pressure capped at 1 beside the real call rate
	signalRate                     // another: pressure beside the real call rate
)

type arm struct {
	name   string
	policy string // the tenant's load balancing policy
	signal signal
}

type armResult struct {
	goodput  float64 // the tenant's successful calls per second
	failed   int     // the tenant's failed calls
	hotShare float64 // the share of the tenant's calls that server 0 answered
}

// TestWeightedRoundRobinReadingAPFPressureMovesATenantOffTheHotServer is
// the proof with real parts: grpc-go servers and clients on loopback.
// With round_robin the tenant loses on the server that pinned clients
// saturate; with weighted_round_robin reading grpcapf's load reports it
// moves its calls to the idle servers; with the reports off it does not.
// The arms run one after another in the same test, each on fresh servers.
func TestWeightedRoundRobinReadingAPFPressureMovesATenantOffTheHotServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real servers for about a minute")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	arms := []arm{
		{"round_robin", "round_robin", signalPressure},
		{"weighted_round_robin, APF pressure reports", "weighted_round_robin", signalPressure},
		{"weighted_round_robin, reports off", "weighted_round_robin", signalNone},
		{"weighted_round_robin, pressure capped at 1, real rate", "weighted_round_robin", signalRateCapped},
		{"weighted_round_robin, pressure, real rate", "weighted_round_robin", signalRate},
	}
	results := make([]armResult, len(arms))
	for i, a := range arms {
		results[i] = runArm(ctx, t, a)
		if ctx.Err() != nil {
			t.Fatal("the proof did not finish within its deadline")
		}
		t.Logf("%-52s goodput %6.1f/s  failed %4d  on the hot server %4.1f%%", a.name, results[i].goodput, results[i].failed, 100*results[i].hotShare)
	}
	fair := float64(proofTenantWorkers) / proofService.Seconds()
	rr, wrr, off, capped := results[0], results[1], results[2], results[3]
	if rr.goodput >= fair/2 {
		t.Errorf("round_robin: the tenant's goodput %.1f/s is not under half its max-min fair share (%.1f/s)", rr.goodput, fair)
	}
	if wrr.goodput < rr.goodput*4/3 || wrr.failed >= rr.failed {
		t.Errorf("weighted_round_robin with APF reports: goodput %.1f/s, %d failed; want at least 4/3 of round_robin's %.1f/s and fewer than its %d failed",
			wrr.goodput, wrr.failed, rr.goodput, rr.failed)
	}
	if off.goodput >= rr.goodput*4/3 {
		t.Errorf("weighted_round_robin without reports: goodput %.1f/s, a gain of a third or more over round_robin's %.1f/s: the reports are not what helps", off.goodput, rr.goodput)
	}
	// The package doc's reason for rps_fractional 1: beside the real rate,
	// a utilization capped at 1 makes every server look the same.
	if capped.goodput >= rr.goodput*4/3 {
		t.Errorf("weighted_round_robin reading a capped utilization beside the real rate: goodput %.1f/s, a gain of a third or more over round_robin's %.1f/s; the package doc says it does not steer",
			capped.goodput, rr.goodput)
	}
}

// proofServer is one server of an arm.
type proofServer struct {
	c    *apf.Controller
	s    *grpc.Server
	addr string
}

func startProofServer(t *testing.T, sig signal) *proofServer {
	t.Helper()
	cfg, err := flowschema.Decode([]byte(proofConfig))
	if err != nil {
		t.Fatal(err)
	}
	c, err := apf.New(cfg, apf.Options{ServerConcurrencyLimit: 10, AdjustPeriod: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Limits()["tenants"].Current; got != proofSeats {
		t.Fatalf("level tenants has %d seats, want %d", got, proofSeats)
	}
	var opts []grpc.ServerOption
	switch sig {
	case signalPressure:
		opts, err = grpcapf.ServerOptions(c, grpcapf.Options{User: metadataUser, LoadReports: true})
	case signalNone:
		opts, err = grpcapf.ServerOptions(c, grpcapf.Options{User: metadataUser})
	case signalRateCapped, signalRate:
		opts, err = grpcapf.ServerOptions(c, grpcapf.Options{User: metadataUser})
		opts = append([]grpc.ServerOption{orca.CallMetricsServerOption(nil)}, append(opts, grpc.ChainUnaryInterceptor(rateReports(c, sig == signalRateCapped)))...)
	}
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, worker{})
	go s.Serve(lis)
	return &proofServer{c: c, s: s, addr: lis.Addr().String()}
}

// rateReports are signals grpcapf does not send, for comparison: the
// pressure (capped at 1 if capped) as utilization, beside the server's
// real rate of finished calls over the last second.
func rateReports(c *apf.Controller, capped bool) grpc.UnaryServerInterceptor {
	var mu sync.Mutex
	var finished []time.Time
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		now := time.Now()
		mu.Lock()
		finished = append(finished, now)
		for len(finished) > 0 && now.Sub(finished[0]) > time.Second {
			finished = finished[1:]
		}
		rate := float64(len(finished))
		mu.Unlock()
		p, _ := c.LevelPressure("tenants")
		if r := orca.CallMetricsRecorderFromContext(ctx); r != nil && p > 0 {
			if capped {
				p = min(p, 1)
			}
			r.SetApplicationUtilization(p)
			r.SetQPS(rate)
		}
		return resp, err
	}
}

// counter counts the calls of a client that end while measuring is set.
type counter struct {
	measuring   *atomic.Bool
	ok, failed  atomic.Int64
	hot, served atomic.Int64
}

// loop sends calls as user through conn until ctx ends, one at a time,
// waiting proofBackoff after a failure; hot is server 0's address.
func (n *counter) loop(ctx context.Context, conn *grpc.ClientConn, user, hot string) {
	client := healthpb.NewHealthClient(conn)
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(as(ctx, user, "tenants"), proofDeadline)
		var p peer.Peer
		_, err := client.Check(cctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p))
		cancel()
		if ctx.Err() != nil {
			return
		}
		if n.measuring.Load() {
			if err == nil {
				n.ok.Add(1)
			} else {
				n.failed.Add(1)
			}
			if p.Addr != nil {
				n.served.Add(1)
				if p.Addr.String() == hot {
					n.hot.Add(1)
				}
			}
		}
		if err != nil {
			select {
			case <-time.After(proofBackoff):
			case <-ctx.Done():
			}
		}
	}
}

// runArm starts three servers, the pinned heavy clients and the tenant,
// warms up, measures the tenant, and stops everything.
func runArm(ctx context.Context, t *testing.T, a arm) armResult {
	t.Helper()
	servers := make([]*proofServer, 3)
	addrs := make([]resolver.Address, 3)
	for i := range servers {
		servers[i] = startProofServer(t, a.signal)
		addrs[i] = resolver.Address{Addr: servers[i].addr}
	}
	var conns []*grpc.ClientConn
	dial := func(target string, opts ...grpc.DialOption) *grpc.ClientConn {
		conn, err := grpc.NewClient(target, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		return conn
	}
	actx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	measuring := new(atomic.Bool)
	heavy := &counter{measuring: measuring}
	for h := range proofHeavy {
		conn := dial("passthrough:///" + servers[0].addr) // pick_first, its own connection
		for range proofHeavyWorkers {
			wg.Go(func() { heavy.loop(actx, conn, fmt.Sprintf("heavy-%d", h), servers[0].addr) })
		}
	}
	r := manual.NewBuilderWithScheme("proof")
	r.InitialState(resolver.State{Addresses: addrs})
	tenant := &counter{measuring: measuring}
	conn := dial(r.Scheme()+":///tenant", grpc.WithResolvers(r), grpc.WithDefaultServiceConfig(serviceConfig(a.policy)))
	for range proofTenantWorkers {
		wg.Go(func() { tenant.loop(actx, conn, "tenant", servers[0].addr) })
	}
	sleep(actx, proofWarmup)
	measuring.Store(true)
	sleep(actx, proofMeasure)
	measuring.Store(false)
	stop()
	wg.Wait()
	for _, conn := range conns {
		conn.Close()
	}
	for _, s := range servers {
		s.s.Stop()
		s.c.Close()
	}
	res := armResult{goodput: float64(tenant.ok.Load()) / proofMeasure.Seconds(), failed: int(tenant.failed.Load())}
	if n := tenant.served.Load(); n > 0 {
		res.hotShare = float64(tenant.hot.Load()) / float64(n)
	}
	t.Logf("%s: heavy clients %d ok, %d failed", a.name, heavy.ok.Load(), heavy.failed.Load())
	return res
}

// serviceConfig selects policy; weighted_round_robin with a short blackout
// and weight update period, so that it steers within the warmup.
func serviceConfig(policy string) string {
	if policy == "weighted_round_robin" {
		return `{"loadBalancingConfig": [{"weighted_round_robin": {"blackoutPeriod": "0.5s", "weightUpdatePeriod": "0.1s"}}]}`
	}
	return `{"loadBalancingConfig": [{"` + policy + `": {}}]}`
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
