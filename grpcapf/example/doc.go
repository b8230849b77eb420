// Package example holds a gRPC server behind API Priority and Fairness
// and a client that balances over several of them by the servers' load
// reports, to copy:
//
//	go run ./server -addr 127.0.0.1:50051 &
//	go run ./server -addr 127.0.0.1:50052 &
//	go run ./server -addr 127.0.0.1:50053 &
//	go run ./client -servers 127.0.0.1:50051 -user heavy -workers 300 -duration 30s &
//	go run ./client -servers 127.0.0.1:50051,127.0.0.1:50052,127.0.0.1:50053 -user alice
//
// The heavy user, pinned to the first server, fills its level there; alice's
// calls, balanced over the three, go mostly to the other two, since the
// first reports a pressure above 1.
//
// The server (server/main.go) serves the standard health service as its
// one RPC (replace it with yours), puts grpcapf's interceptors in front of
// it with load reports on, and serves the out-of-band ORCA service. The
// client (client/main.go) has one ClientConn over every server with
// grpc-go's weighted_round_robin policy, sends calls as a user, and
// prints how many each server answered and how many failed.
package example
