package grpcapf_test

import (
	"context"
	"testing"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/grpcapf"
	"google.golang.org/grpc"
)

var alice = apf.User{Name: "alice", Groups: []string{"tenants", "system:authenticated"}}

// fixedUser is a UserFunc that allocates nothing.
func fixedUser(context.Context, string) (apf.User, error) { return alice, nil }

func nopHandler(context.Context, any) (any, error) { return nil, nil }

// admitDirect is APF's admission path as the HTTP middleware runs it:
// upstream's wait limit, Wait, Finish.
func admitDirect(ctx context.Context, c *apf.Controller, user apf.User) {
	arrived := time.Now()
	wctx, cancel := context.WithDeadline(ctx, arrived.Add(fairqueue.UpstreamWaitLimit(ctx, arrived, apf.DefaultRequestWaitLimit)))
	t, err := c.Wait(wctx, &apf.Request{User: user, Info: grpcapf.MethodRequestInfo(checkMethod, false)}, nil)
	cancel()
	if err != nil {
		panic(err)
	}
	t.Finish()
}

func TestUnaryInterceptorAddsNoAllocationToAdmission(t *testing.T) {
	c := newController(t, 600)
	unary := grpcapf.UnaryInterceptorForTest(c, grpcapf.Options{User: fixedUser})
	info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
	user, _ := fixedUser(context.Background(), "")
	ctx := context.Background()
	direct := testing.AllocsPerRun(200, func() { admitDirect(ctx, c, user) })
	intercepted := testing.AllocsPerRun(200, func() { unary(ctx, nil, info, nopHandler) })
	if intercepted > direct {
		t.Errorf("an RPC through the unary interceptor allocates %v times, APF's admission path alone %v", intercepted, direct)
	}
}

// BenchmarkUnaryInterceptor compares an admitted RPC through the unary
// interceptor with APF's admission path alone (Wait with upstream's wait
// limit, Finish), both with the same user.
func BenchmarkUnaryInterceptor(b *testing.B) {
	c := newController(b, 600)
	user, _ := fixedUser(context.Background(), "")
	ctx := context.Background()
	b.Run("apf-alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			admitDirect(ctx, c, user)
		}
	})
	b.Run("interceptor", func(b *testing.B) {
		unary := grpcapf.UnaryInterceptorForTest(c, grpcapf.Options{User: fixedUser})
		info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
		b.ReportAllocs()
		for b.Loop() {
			unary(ctx, nil, info, nopHandler)
		}
	})
	b.Run("interceptor-MetadataUser", func(b *testing.B) {
		unary := grpcapf.UnaryInterceptorForTest(c, grpcapf.Options{User: metadataUser})
		info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
		mctx := incoming("alice", "tenants")
		b.ReportAllocs()
		for b.Loop() {
			unary(mctx, nil, info, nopHandler)
		}
	})
}
