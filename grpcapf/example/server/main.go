// Command server is a gRPC server behind API Priority and Fairness: see
// package example.
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"os"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/grpcapf"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "address to listen on")
	seats := flag.Int("seats", 100, "server concurrency limit, in seats, divided among the priority levels")
	config := flag.String("config", "", "file of FlowSchemas and PriorityLevelConfigurations (YAML); empty: upstream's bootstrap configuration")
	work := flag.Duration("work", 20*time.Millisecond, "how long each call works")
	flag.Parse()
	if err := run(*addr, *seats, *config, *work); err != nil {
		log.Fatal(err)
	}
}

func run(addr string, seats int, config string, work time.Duration) error {
	var cfg *flowschema.Config
	if config != "" {
		b, err := os.ReadFile(config)
		if err != nil {
			return err
		}
		if cfg, err = flowschema.Decode(b); err != nil {
			return err
		}
	}
	// Not a Kubernetes API server: upstream's known bugs fixed, and a level
	// that has lent all its seats gets some back as soon as a call waits.
	c, err := apf.New(cfg, apf.StandaloneOptions(seats))
	if err != nil {
		return err
	}
	defer c.Close()
	opts, err := grpcapf.ServerOptions(c, grpcapf.Options{
		// Behind a proxy that authenticates callers and sets these keys;
		// with mTLS use grpcapf.CertificateUser instead.
		User:        grpcapf.MetadataUser("x-remote-user", "x-remote-group"),
		LoadReports: true,
	})
	if err != nil {
		return err
	}
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, &service{work: work})
	if err := grpcapf.RegisterLoadReportService(s, c, grpcapf.LoadReportServiceOptions{}); err != nil {
		return err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log.Printf("serving on %s with %d seats", lis.Addr(), seats)
	return s.Serve(lis)
}

// service stands for your service: each call works for a while.
type service struct {
	healthpb.UnimplementedHealthServer
	work time.Duration
}

func (s *service) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	t := time.NewTimer(s.work)
	defer t.Stop()
	select {
	case <-t.C:
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
