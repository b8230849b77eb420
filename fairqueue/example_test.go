package fairqueue_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// A deterministic run: the core takes the time as an argument, reports
// dispatches synchronously, and leaves final-seat release to the caller.
func ExampleQueueSet() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	qs, err := fairqueue.NewQueueSet(fairqueue.Config{
		Name: "workload-low", Queues: 4, HandSize: 1, QueueLengthLimit: 2, ConcurrencyLimit: 2,
	}, start)
	if err != nil {
		panic(err)
	}
	qs.SetDispatchFunc(func(r *fairqueue.Request) {
		fmt.Printf("dispatch %s from queue %d\n", r.FlowDistinguisher, r.Queue())
	})
	reqs := make([]fairqueue.Request, 5)
	for i := range reqs {
		reqs[i].FlowDistinguisher = fmt.Sprintf("r%d", i)
		hash := uint64(i % 2) // two flows
		if reason := qs.Arrive(start, &reqs[i], hash, fairqueue.WorkEstimate{InitialSeats: 1}); reason != "" {
			fmt.Printf("reject %s: %s\n", reqs[i].FlowDistinguisher, reason)
		}
	}
	// r0 ran 10ms, longer than G (3ms), so its queue falls behind queue 1.
	now := start.Add(10 * time.Millisecond)
	qs.Finish(now, &reqs[0])
	qs.Finish(now, &reqs[1])
	fmt.Printf("%+v\n", qs.Counts())
	// Output:
	// dispatch r0 from queue 0
	// dispatch r1 from queue 1
	// dispatch r3 from queue 1
	// dispatch r2 from queue 0
	// {Waiting:1 Executing:2 SeatsInUse:2 SeatsWaiting:1 Dispatched:4 Rejected:0 TimedOut:0 Cancelled:0 WaitLimitExpired:0 CallerCancelled:0 EpochAdvances:0 ActiveQueues:2 Queues:4}
}

// Final seats are held after Finish until the caller's Release.
func ExampleQueueSet_Release() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	qs, _ := fairqueue.NewQueueSet(fairqueue.Config{Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 4}, start)
	var r fairqueue.Request
	qs.Arrive(start, &r, 1, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: 5 * time.Millisecond})
	at, lingering := qs.Finish(start.Add(time.Millisecond), &r)
	fmt.Println(r.State(), lingering, at.Sub(start), qs.Counts().SeatsInUse)
	qs.Release(at, &r)
	fmt.Println(r.State(), qs.Counts().SeatsInUse)
	// Output:
	// lingering true 6ms 3
	// done 0
}

// twoRequestDump dumps a queue set of one seat after two requests of
// different flows arrived in the same queue: one executing, one waiting.
func twoRequestDump() fairqueue.Dump {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	qs, _ := fairqueue.NewQueueSet(fairqueue.Config{Name: "global-default", Queues: 2, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 1}, start)
	reqs := make([]fairqueue.Request, 2)
	for i := range reqs {
		reqs[i].FlowSchema, reqs[i].FlowDistinguisher = "global-default", fmt.Sprintf("alice%d", i)
		qs.Arrive(start, &reqs[i], 1, fairqueue.WorkEstimate{InitialSeats: 1})
	}
	return qs.Dump()
}

// The debug endpoints' text format.
func ExampleDump_WriteQueues() {
	d := twoRequestDump()
	_ = d.WriteQueues(os.Stdout)
	_ = d.WriteRequests(os.Stdout)
	// Output:
	// PriorityLevelName, Index,  PendingRequests, ExecutingRequests, SeatsInUse, NextDispatchR, InitialSeatsSum, MaxSeatsSum, TotalWorkSum
	// global-default,    0,      0,               0,                 0,          0.00000000ss,  0,               0,           0.00000000ss
	// global-default,    1,      1,               1,                 1,          0.00300000ss,  1,               1,           0.00300000ss
	// PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime,           InitialSeats, FinalSeats, AdditionalLatency, StartTime
	// global-default,    global-default, 1,          0,                   alice1,          2026-01-01T00:00:00Z, 1,            0,          0s,                0001-01-01T00:00:00Z
	// global-default,    global-default, 1,          -1,                  alice0,          2026-01-01T00:00:00Z, 1,            0,          0s,                2026-01-01T00:00:00Z
}

// EachRequest visits a dump's requests in dump_requests' order, for a
// caller writing its own format.
func ExampleDump_EachRequest() {
	d := twoRequestDump()
	d.EachRequest(func(queue, position int, r *fairqueue.RequestDump) {
		fmt.Println(queue, position, r.FlowDistinguisher, r.StartTime.IsZero())
	})
	// Output:
	// 1 0 alice1 true
	// 1 -1 alice0 false
}

// The concurrent shell blocks in the caller's goroutine.
func ExampleLimiter() {
	l, err := fairqueue.NewLimiter(fairqueue.Config{Name: "pl", Queues: 8, HandSize: 2, QueueLengthLimit: 10, ConcurrencyLimit: 2}, fairqueue.LimiterOptions{})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = l.Do(ctx, 42, fairqueue.WorkEstimate{InitialSeats: 1}, func() {
		fmt.Println("serving")
	})
	fmt.Println(err, l.IsIdle())
	// Output:
	// serving
	// <nil> true
}

// perFlow counts dispatches and rejections per flow, keyed by the flow's
// opaque Key: what a metrics layer with per-flow counters does.
type perFlow struct {
	fairqueue.NopObserver
	dispatched map[any]int
	rejected   map[any]int
}

func (o *perFlow) Dispatched(r fairqueue.RequestInfo, _ time.Duration) { o.dispatched[r.Key]++ }
func (o *perFlow) Rejected(r fairqueue.RequestInfo, reason fairqueue.Reason) {
	o.rejected[r.Key]++
	fmt.Printf("%s/%s rejected (%s) at queue %d\n", r.FlowSchema, r.FlowDistinguisher, reason, r.Queue)
}

// Flow identity passed to DoFlow reaches the Observer (and Dump), so
// per-flow metrics need no lookup of their own.
func ExampleLimiter_DoFlow() {
	obs := &perFlow{dispatched: map[any]int{}, rejected: map[any]int{}}
	l, err := fairqueue.NewLimiter(fairqueue.Config{Name: "pl", Queues: 8, HandSize: 1, QueueLengthLimit: 0, ConcurrencyLimit: 1},
		fairqueue.LimiterOptions{Observer: obs})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	alice := fairqueue.NewFlow("service-accounts", "alice")
	alice.Key = "alice"
	bob := fairqueue.NewFlow("service-accounts", "bob")
	bob.Key = "bob"
	one := fairqueue.WorkEstimate{InitialSeats: 1}
	_ = l.DoFlow(ctx, alice, one, func() {
		// The only seat is taken and queues hold nothing: bob is turned away.
		err := l.DoFlow(ctx, bob, one, func() {})
		fmt.Println(err)
	})
	_ = l.DoFlow(ctx, bob, one, func() {})
	fmt.Println(obs.dispatched["alice"], obs.dispatched["bob"], obs.rejected["bob"])
	// Output:
	// service-accounts/bob rejected (queue-full) at queue 2
	// fairqueue: request rejected: queue-full
	// 1 1 1
}

// Upstream's wait limit for a request with a deadline is a quarter of the
// time left, at most a minute; without one it is the default.
func ExampleUpstreamWaitLimit() {
	arrived := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), arrived.Add(60*time.Second))
	defer cancel()
	fmt.Println(fairqueue.UpstreamWaitLimit(ctx, arrived, fairqueue.DefaultWaitLimit))
	fmt.Println(fairqueue.UpstreamWaitLimit(context.Background(), arrived, fairqueue.DefaultWaitLimit))
	// Output:
	// 15s
	// 15s
}

// Validate names every bad field; Limiter returns the same error.
func ExampleWorkEstimate_Validate() {
	err := fairqueue.WorkEstimate{InitialSeats: 0, AdditionalLatency: -time.Millisecond}.Validate()
	fmt.Println(err)
	// Output:
	// fairqueue: invalid work estimate: InitialSeats=0 must be at least 1
	// AdditionalLatency=-1ms must not be negative
}
