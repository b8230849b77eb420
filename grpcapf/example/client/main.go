// Command client calls servers of package example through one ClientConn
// balanced by grpc-go's weighted_round_robin, which reads the servers' APF
// load reports, and prints how many calls each server answered.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	_ "google.golang.org/grpc/balancer/weightedroundrobin" // registers weighted_round_robin
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
)

// serviceConfig turns weighted_round_robin on. The blackout period (how
// long a server must report before its weight counts) is shortened from
// the default 10 s so that a short run shows the steering.
const serviceConfig = `{"loadBalancingConfig": [{"weighted_round_robin": {"blackoutPeriod": "1s"}}]}`

func main() {
	servers := flag.String("servers", "127.0.0.1:50051,127.0.0.1:50052,127.0.0.1:50053", "comma-separated server addresses")
	user := flag.String("user", "alice", "user the calls are sent as")
	group := flag.String("group", "tenants", "group the calls are sent as")
	workers := flag.Int("workers", 8, "calls in flight")
	duration := flag.Duration("duration", 10*time.Second, "how long to send calls")
	flag.Parse()
	if err := run(strings.Split(*servers, ","), *user, *group, *workers, *duration); err != nil {
		log.Fatal(err)
	}
}

func run(servers []string, user, group string, workers int, duration time.Duration) error {
	r := manual.NewBuilderWithScheme("example")
	addrs := make([]resolver.Address, len(servers))
	for i, s := range servers {
		addrs[i] = resolver.Address{Addr: s}
	}
	r.InitialState(resolver.State{Addresses: addrs})
	conn, err := grpc.NewClient(r.Scheme()+":///servers", grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(serviceConfig))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-remote-user", user, "x-remote-group", group), duration)
	defer cancel()

	var mu sync.Mutex
	answered := map[string]int{}
	failed := map[codes.Code]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				var p peer.Peer
				_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p))
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				if err != nil {
					failed[status.Code(err)]++
				} else {
					answered[p.Addr.String()]++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(100 * time.Millisecond) // a real client honours grpc-retry-pushback-ms
				}
			}
		})
	}
	wg.Wait()
	names := make([]string, 0, len(answered))
	for a := range answered {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		fmt.Printf("%s answered %d\n", a, answered[a])
	}
	for code, n := range failed {
		fmt.Printf("failed with %s: %d\n", code, n)
	}
	return nil
}
