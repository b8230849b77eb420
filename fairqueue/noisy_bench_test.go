package fairqueue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkLimiterNoisyNeighbour measures, in real time, what a quiet flow
// sees next to a noisy one: 8 seats, a handler that sleeps 20 ms, one noisy
// flow with 32 closed-loop clients (it keeps about 24 requests waiting)
// and 4 quiet flows, each sending one request at a time with 30 ms of
// think time, over 64 queues (service and think times jittered by ±5 and
// ±10 ms). One op is one quiet request; the metrics are
// latency percentiles (arrival to handler done) and the median wait
// (arrival to handler start) in milliseconds. Sub-benchmarks vary the hand
// size (the noisy flow occupies up to that many queues) and G
// (Config.ServiceDuration; upstream's 3 ms by default, or the real 20 ms).
// See TestQuietFlowWait for the same in simulated time.
//
//	go test -run '^$' -bench NoisyNeighbour -benchtime 400x ./fairqueue/
func BenchmarkLimiterNoisyNeighbour(b *testing.B) {
	for _, bc := range []struct {
		hand int
		g    time.Duration
	}{{8, 0}, {2, 0}, {8, 20 * time.Millisecond}} {
		hand, g := bc.hand, bc.g
		name := fmt.Sprintf("hand=%d/G=default", hand)
		if g != 0 {
			name = fmt.Sprintf("hand=%d/G=%v", hand, g)
		}
		b.Run(name, func(b *testing.B) {
			const service, quietFlows, noisyClients = 20 * time.Millisecond, 4, 32
			l, err := NewLimiter(Config{Name: "tenants", Queues: 64, HandSize: hand, QueueLengthLimit: 50, ConcurrencyLimit: 8, ServiceDuration: g}, LimiterOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			// Service and think times are jittered (±25%, ±33%) so that the
			// seats do not free in lockstep, which would fix each quiet
			// request's wait by phase alone.
			work := func() { time.Sleep(service*3/4 + rand.N(service/2)) }
			var mu sync.Mutex
			var quiet, quietWait, noisy []time.Duration
			stop := make(chan struct{})
			var noisyWG sync.WaitGroup
			noisyFlow := NewFlow("tenants", "noisy")
			for range noisyClients {
				noisyWG.Add(1)
				go func() {
					defer noisyWG.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						start := time.Now()
						if l.DoFlow(ctx, noisyFlow, WorkEstimate{InitialSeats: 1}, work) == nil {
							mu.Lock()
							noisy = append(noisy, time.Since(start))
							mu.Unlock()
						}
					}
				}()
			}
			time.Sleep(200 * time.Millisecond) // let the noisy backlog build
			b.ResetTimer()
			var quietWG sync.WaitGroup
			per := (b.N + quietFlows - 1) / quietFlows
			for q := range quietFlows {
				quietWG.Add(1)
				go func() {
					defer quietWG.Done()
					flow := NewFlow("tenants", fmt.Sprintf("quiet-%d", q))
					for range per {
						start := time.Now()
						var wait time.Duration
						if err := l.DoFlow(ctx, flow, WorkEstimate{InitialSeats: 1}, func() {
							wait = time.Since(start)
							work()
						}); err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						quiet = append(quiet, time.Since(start))
						quietWait = append(quietWait, wait)
						mu.Unlock()
						time.Sleep(20*time.Millisecond + rand.N(20*time.Millisecond))
					}
				}()
			}
			quietWG.Wait()
			b.StopTimer()
			close(stop)
			noisyWG.Wait()
			ms := func(ds []time.Duration, p float64) float64 {
				slices.Sort(ds)
				return float64(ds[int(p*float64(len(ds)-1))]) / 1e6
			}
			b.ReportMetric(ms(quiet, 0.5), "quiet-p50-ms")
			b.ReportMetric(ms(quiet, 0.9), "quiet-p90-ms")
			b.ReportMetric(ms(quietWait, 0.5), "quiet-wait-p50-ms")
			b.ReportMetric(ms(noisy, 0.5), "noisy-p50-ms")
		})
	}
}
