package grpcapf

import (
	"github.com/fairslice/fairslice/apf"
	"google.golang.org/grpc"
)

// UnaryInterceptorForTest returns the admitting unary interceptor that
// ServerOptions(c, opts) chains, for benchmarks that call it directly.
func UnaryInterceptorForTest(c *apf.Controller, opts Options) grpc.UnaryServerInterceptor {
	if _, err := ServerOptions(c, opts); err != nil {
		panic(err)
	}
	s := newServer(c, opts)
	return s.unary
}
