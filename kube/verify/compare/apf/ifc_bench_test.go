package apfcompare

import (
	"context"
	"flag"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/fairslice/fairslice/flowschema"
)

// ifcRegistered registers upstream's metrics before the controllers are
// built, as a server with /metrics does: every metric call then updates a
// real series (by default they are unregistered no-ops on both sides).
// Registration is process-wide, so it applies to every benchmark of the
// run.
var ifcRegistered = flag.Bool("apfbench.registered", false, "register upstream's metrics before BenchmarkHandleInterface* builds the controllers")

// ifcImpls starts upstream's controller and kube/flowcontrol's on the
// bootstrap configuration with 600 seats, through their informers, on the
// real clock.
func ifcImpls(b *testing.B) []struct {
	name string
	ctl  flowcontrol.Interface
} {
	if *ifcRegistered {
		registerUpstream.Do(metrics.Register)
	}
	up := newIfcSideClock(b, flowschema.DefaultConfig(), 600, false, true)
	b.Cleanup(up.close)
	ours := newIfcSideClock(b, flowschema.DefaultConfig(), 600, true, true)
	b.Cleanup(ours.close)
	return []struct {
		name string
		ctl  flowcontrol.Interface
	}{{"impl=upstream", up.ctl}, {"impl=fairslice", ours.ctl}}
}

// The filter's closures, made once: what remains per request is what
// Handle itself costs.
var (
	benchNote      = func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string) {}
	benchEstimate  = func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} }
	benchQueueNote = func(bool) {}
	benchExec      = func() {}
)

// BenchmarkHandleInterface is one request through
// utilflowcontrol.Interface.Handle, cycling over the mixed requests
// (seven priority levels, exempt included), uncontended. cpu-ns/op is the
// process's CPU time per op (see cpuTime).
func BenchmarkHandleInterface(b *testing.B) {
	_, digests := mixedRequests(b)
	ctx := context.Background()
	for _, impl := range ifcImpls(b) {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			for i := 0; b.Loop(); i++ {
				impl.ctl.Handle(ctx, digests[i%len(digests)], benchNote, benchEstimate, benchQueueNote, benchExec)
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkHandleInterfaceParallel is the same with b.RunParallel.
func BenchmarkHandleInterfaceParallel(b *testing.B) {
	_, digests := mixedRequests(b)
	ctx := context.Background()
	for _, impl := range ifcImpls(b) {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					impl.ctl.Handle(ctx, digests[i%len(digests)], benchNote, benchEstimate, benchQueueNote, benchExec)
				}
			})
			reportCPU(b, cpu)
		})
	}
}
