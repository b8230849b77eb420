package fairqueuecompare

import (
	"context"
	"testing"
	"time"

	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	testeventclock "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/testing/eventclock"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/shufflesharding"
)

// nopGauge satisfies metrics.Gauge and metrics.RatioedGauge and does nothing.
type nopGauge struct{}

func (nopGauge) Set(float64)            {}
func (nopGauge) Inc()                   {}
func (nopGauge) Dec()                   {}
func (nopGauge) Add(float64)            {}
func (nopGauge) SetToCurrentTime()      {}
func (nopGauge) SetDenominator(float64) {}

// driver is one implementation under benchmark. Slots identify requests;
// every dispatched slot is appended to *dispatched in dispatch order.
type driver interface {
	arrive(slot int, hash uint64) (accepted bool)
	finish(slot int)
	advance(d time.Duration)
}

type benchConfig struct {
	queues, hand, qll, limit, slots int
}

// upstreamDriver drives k8s.io/apiserver's QueueSet from one goroutine.
type upstreamDriver struct {
	clk   *testeventclock.Fake
	qs    fq.QueueSet
	reqs  []fq.Request
	notes []fq.QueueNoteFn
	work  fcrequest.WorkEstimate
	ctx   context.Context
	exec  func()
}

func newUpstream(tb testing.TB, c benchConfig, dispatched *[]int) *upstreamDriver {
	clk, _ := testeventclock.NewFake(time.Unix(1e9, 0), 0, nil)
	qsc, err := queueset.NewQueueSetFactory(clk).BeginConstruction(
		fq.QueuingConfig{Name: "bench", DesiredNumQueues: c.queues, QueueLengthLimit: c.qll, HandSize: c.hand},
		metrics.RatioedGaugePair{RequestsWaiting: nopGauge{}, RequestsExecuting: nopGauge{}}, nopGauge{}, nopGauge{})
	if err != nil {
		tb.Fatal(err)
	}
	d := &upstreamDriver{
		clk:   clk,
		qs:    qsc.Complete(fq.DispatchingConfig{ConcurrencyLimit: c.limit, ConcurrencyDenominator: c.limit}),
		reqs:  make([]fq.Request, c.slots),
		notes: make([]fq.QueueNoteFn, c.slots),
		work:  fcrequest.WorkEstimate{InitialSeats: 1},
		ctx:   context.Background(),
		exec:  func() {},
	}
	for i := range d.notes {
		d.notes[i] = func(inQueue bool) {
			if !inQueue {
				*dispatched = append(*dispatched, i)
			}
		}
	}
	return d
}

func (d *upstreamDriver) arrive(slot int, hash uint64) bool {
	req, _ := d.qs.StartRequest(d.ctx, &d.work, hash, "", "fs", nil, nil, d.notes[slot])
	d.reqs[slot] = req
	return req != nil
}

func (d *upstreamDriver) finish(slot int) {
	d.reqs[slot].Finish(d.exec)
	d.reqs[slot] = nil
}

func (d *upstreamDriver) advance(dt time.Duration) { d.clk.SetTime(d.clk.Now().Add(dt)) }

// oursDriver drives fairqueue.QueueSet.
type oursDriver struct {
	qs   *fairqueue.QueueSet
	reqs []fairqueue.Request
	now  time.Time
	work fairqueue.WorkEstimate
	// immediateDispatch records queueless or queued dispatches by slot.
}

func newOurs(tb testing.TB, c benchConfig, dispatched *[]int) *oursDriver {
	now := time.Unix(1e9, 0)
	qs, err := fairqueue.NewQueueSet(fairqueue.Config{Name: "bench", Queues: c.queues, HandSize: c.hand, QueueLengthLimit: c.qll, ConcurrencyLimit: c.limit}, now)
	if err != nil {
		tb.Fatal(err)
	}
	d := &oursDriver{qs: qs, reqs: make([]fairqueue.Request, c.slots), now: now, work: fairqueue.WorkEstimate{InitialSeats: 1}}
	for i := range d.reqs {
		d.reqs[i].Value = i
	}
	qs.SetDispatchFunc(func(r *fairqueue.Request) { *dispatched = append(*dispatched, r.Value.(int)) })
	return d
}

func (d *oursDriver) arrive(slot int, hash uint64) bool {
	return d.qs.Arrive(d.now, &d.reqs[slot], hash, d.work) == ""
}

func (d *oursDriver) finish(slot int) { d.qs.Finish(d.now, &d.reqs[slot]) }

func (d *oursDriver) advance(dt time.Duration) { d.now = d.now.Add(dt) }

func benchHashes(n int) []uint64 {
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

// runRequests runs b.N requests through d. With backlog < 0 each request
// dispatches at once and is finished right away, with `executing` others
// executing throughout; otherwise the seats are kept full, `backlog`
// requests wait throughout, and each op is the arrival of a request (which
// waits) plus the finish of the oldest executing one (which dispatches the
// fairest waiting request).
func runRequests(b *testing.B, mk func(*[]int) driver, c benchConfig, executing, backlog int) {
	hashes := benchHashes(1024)
	dispatched := make([]int, 0, 2*4096+c.slots)
	d := mk(&dispatched)
	free := make([]int, 0, c.slots)
	for i := c.slots - 1; i >= 0; i-- {
		free = append(free, i)
	}
	take := func() int {
		s := free[len(free)-1]
		free = free[:len(free)-1]
		return s
	}
	if backlog < 0 {
		for i := 0; i < executing; i++ {
			if !d.arrive(take(), hashes[i&1023]) {
				b.Fatal("rejected")
			}
		}
		dispatched = dispatched[:0]
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			d.advance(time.Microsecond)
			s := take()
			if !d.arrive(s, hashes[i&1023]) || len(dispatched) != 1 {
				b.Fatal("not dispatched at once")
			}
			dispatched = dispatched[:0]
			d.finish(s)
			free = append(free, s)
		}
		return
	}
	for i := 0; i < c.limit+backlog; i++ {
		if !d.arrive(take(), hashes[i&1023]) {
			b.Fatal("rejected")
		}
	}
	next := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.advance(time.Microsecond)
		if !d.arrive(take(), hashes[i&1023]) {
			b.Fatal("rejected")
		}
		s := dispatched[next]
		next++
		if next >= 4096 {
			dispatched = append(dispatched[:0], dispatched[next:]...)
			next = 0
		}
		d.finish(s)
		free = append(free, s)
	}
}

func handFor(queues int) int {
	h := 8
	for h > 1 && shufflesharding.RequiredEntropyBits(queues, h) > shufflesharding.MaxHashBits {
		h--
	}
	return h
}

// BenchmarkRequest compares one request (arrive, dispatch, finish) through
// upstream's QueueSet and through fairqueue, with 128 queues, hand 8,
// queue length limit 50 and 100 seats, except queues10000: 10,000 queues,
// hand 4, with 1,000 requests waiting throughout.
func BenchmarkRequest(b *testing.B) {
	impls := []struct {
		name string
		mk   func(testing.TB, benchConfig, *[]int) driver
	}{
		{"impl=upstream", func(tb testing.TB, c benchConfig, p *[]int) driver { return newUpstream(tb, c, p) }},
		{"impl=fairslice", func(tb testing.TB, c benchConfig, p *[]int) driver { return newOurs(tb, c, p) }},
	}
	base := benchConfig{queues: 128, hand: 8, qll: 50, limit: 100, slots: 2200}
	big := benchConfig{queues: 10000, hand: handFor(10000), qll: 50, limit: 100, slots: 2200}
	cases := []struct {
		name               string
		c                  benchConfig
		executing, backlog int
	}{
		{"immediate-idle", base, 0, -1},
		{"immediate-50executing", base, 50, -1},
		{"queued", base, 0, 0},
		{"backlog1000", base, 0, 1000},
		// 10,000 queues allow hands of at most 4 (60 bits of entropy).
		{"queues10000", big, 0, 1000},
	}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			for _, tc := range cases {
				b.Run(tc.name, func(b *testing.B) {
					runRequests(b, func(p *[]int) driver { return impl.mk(b, tc.c, p) }, tc.c, tc.executing, tc.backlog)
				})
			}
		})
	}
}
