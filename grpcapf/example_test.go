package grpcapf_test

import (
	"context"
	"fmt"
	"net"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/grpcapf"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// Put APF in front of a gRPC server, with load reports for
// weighted_round_robin clients, and call it.
func ExampleServerOptions() {
	// Upstream's bootstrap FlowSchemas and priority levels; 100 seats.
	c, err := apf.New(nil, apf.Options{ServerConcurrencyLimit: 100})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	opts, err := grpcapf.ServerOptions(c, grpcapf.Options{
		// A proxy in front authenticates callers and sets these keys.
		User:        grpcapf.MetadataUser("x-remote-user", "x-remote-group"),
		LoadReports: true,
	})
	if err != nil {
		panic(err)
	}
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	if err := grpcapf.RegisterLoadReportService(s, c, grpcapf.LoadReportServiceOptions{}); err != nil {
		panic(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go s.Serve(lis)
	defer s.Stop()

	conn, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"weighted_round_robin": {}}]}`))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-remote-user", "alice", "x-remote-group", "team-a")
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Status)
	fmt.Println(c.Classify(&apf.Request{
		User: apf.User{Name: "alice", Groups: []string{"team-a", "system:authenticated"}},
		Info: grpcapf.MethodRequestInfo("/grpc.health.v1.Health/Check", false),
	}).PriorityLevel)
	// Output:
	// SERVING
	// global-default
}

// A FlowSchema for one gRPC service: nonResourceURLs match full methods.
func ExampleMethodRequestInfo() {
	cfg, err := flowschema.Decode([]byte(`
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: orders}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 20
    limitResponse: {type: Queue, queuing: {queues: 16, handSize: 4, queueLengthLimit: 20}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: orders}
spec:
  priorityLevelConfiguration: {name: orders}
  matchingPrecedence: 1000
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: system:authenticated}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["/shop.Orders/*"]}]
`))
	if err != nil {
		panic(err)
	}
	c, err := apf.New(cfg, apf.Options{ServerConcurrencyLimit: 100})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	alice := apf.User{Name: "alice", Groups: []string{"system:authenticated"}}
	for _, rpc := range []struct {
		method string
		stream bool
	}{{"/shop.Orders/Create", false}, {"/shop.Orders/Watch", true}, {"/shop.Catalog/List", false}} {
		ri := grpcapf.MethodRequestInfo(rpc.method, rpc.stream)
		cl := c.Classify(&apf.Request{User: alice, Info: ri})
		fmt.Println(ri.Verb, ri.Path, "→", cl.FlowSchema, cl.PriorityLevel)
	}
	// Output:
	// create /shop.Orders/Create → orders orders
	// watch /shop.Orders/Watch → orders orders
	// create /shop.Catalog/List → catch-all catch-all
}
