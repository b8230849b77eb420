package fairqueue

import (
	"fmt"
	"testing"
	"time"

	"github.com/fairslice/fairslice/shufflesharding"
)

// benchHand returns the largest hand ≤ 8 that shuffle sharding accepts for
// the given number of queues (at most 60 bits of entropy).
func benchHand(queues int) int {
	h := 8
	for h > 1 && shufflesharding.RequiredEntropyBits(queues, h) > shufflesharding.MaxHashBits {
		h--
	}
	return h
}

// benchFlows returns n distinct flow hashes.
func benchFlows(n int) []uint64 {
	out := make([]uint64, n)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = x
	}
	return out
}

// benchImmediate measures Arrive+Finish of a request that dispatches at
// once, with `executing` other requests executing.
func benchImmediate(b *testing.B, queues, hand, executing int) {
	now := time.Unix(0, 0)
	qs, err := NewQueueSet(Config{Name: "b", Queues: queues, HandSize: hand, QueueLengthLimit: 50, ConcurrencyLimit: executing + 100}, now)
	if err != nil {
		b.Fatal(err)
	}
	flows := benchFlows(1024)
	bg := make([]Request, executing)
	for i := range bg {
		qs.Arrive(now, &bg[i], flows[i%len(flows)], WorkEstimate{InitialSeats: 1})
	}
	var r Request
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(time.Microsecond)
		if qs.Arrive(now, &r, flows[i&1023], WorkEstimate{InitialSeats: 1}) != "" || r.state != StateExecuting {
			b.Fatal("not dispatched")
		}
		qs.Finish(now, &r)
	}
}

// benchQueued measures, with all seats busy, Arrive of a request that
// waits plus Finish of the oldest executing request, which dispatches the
// fairest waiting one; `backlog` requests stay waiting throughout.
func benchQueued(b *testing.B, queues, hand, backlog int) {
	now := time.Unix(0, 0)
	const limit = 100
	qll := max(50, 2*backlog/queues+2)
	qs, err := NewQueueSet(Config{Name: "b", Queues: queues, HandSize: hand, QueueLengthLimit: qll, ConcurrencyLimit: limit}, now)
	if err != nil {
		b.Fatal(err)
	}
	flows := benchFlows(1024)
	ring := make([]Request, limit+backlog+1)
	// FIFO of executing requests, in dispatch order.
	exec := make([]*Request, 0, len(ring))
	qs.SetDispatchFunc(func(r *Request) { exec = append(exec, r) })
	next := 0
	free := make([]*Request, 0, len(ring))
	for i := range ring {
		free = append(free, &ring[i])
	}
	arrive := func(i int) {
		r := free[len(free)-1]
		free = free[:len(free)-1]
		if qs.Arrive(now, r, flows[i&1023], WorkEstimate{InitialSeats: 1}) != "" {
			b.Fatal("rejected")
		}
	}
	for i := 0; i < limit+backlog; i++ {
		arrive(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(time.Microsecond)
		arrive(i)
		r := exec[next]
		next++
		if next > len(ring) {
			copy(exec, exec[next:])
			exec = exec[:len(exec)-next]
			next = 0
		}
		qs.Finish(now, r)
		free = append(free, r)
	}
}

// BenchmarkRequest measures one request through the core (arrive, dispatch,
// finish) in the configurations of the issue.
func BenchmarkRequest(b *testing.B) {
	b.Run("immediate-idle", func(b *testing.B) { benchImmediate(b, 128, 8, 0) })
	b.Run("immediate-50executing", func(b *testing.B) { benchImmediate(b, 128, 8, 50) })
	b.Run("queued", func(b *testing.B) { benchQueued(b, 128, 8, 0) })
	b.Run("backlog1000", func(b *testing.B) { benchQueued(b, 128, 8, 1000) })
	b.Run("queues10000", func(b *testing.B) { benchQueued(b, 10000, benchHand(10000), 1000) })
}

// BenchmarkQueueSweep shows that per-request cost does not grow linearly
// with the number of queues (the dispatch index is O(log queues)).
func BenchmarkQueueSweep(b *testing.B) {
	for _, n := range []int{16, 256, 4096, 10000, 100000} {
		b.Run(fmt.Sprintf("queued/queues=%d/hand=%d", n, benchHand(n)), func(b *testing.B) { benchQueued(b, n, benchHand(n), 1000) })
		b.Run(fmt.Sprintf("immediate/queues=%d/hand=%d", n, benchHand(n)), func(b *testing.B) { benchImmediate(b, n, benchHand(n), 0) })
	}
}
