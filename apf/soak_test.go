package apf_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

var soakRequests = flag.Int("apf.soak", 100_000, "requests in TestSoak (CI runs 100,000)")

// soakConfig returns a configuration with levels a, b (queuing) and, when
// withC, c (reject type) for groups ga, gb and gc.
func soakConfig(t testing.TB, withC bool, queues int) *flowschema.Config {
	y := ""
	for _, l := range []struct {
		name, resp string
		on         bool
	}{{"a", fmt.Sprintf("type: Queue\n      queuing: {queues: %d, handSize: 2, queueLengthLimit: 10}", queues), true},
		{"b", "type: Queue\n      queuing: {queues: 4, handSize: 1, queueLengthLimit: 3}", true},
		{"c", "type: Reject", withC}} {
		if !l.on {
			continue
		}
		y += fmt.Sprintf(`---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: %[1]s}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse:
      %[2]s
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: %[1]s}
spec:
  priorityLevelConfiguration: {name: %[1]s}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: g%[1]s}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`, l.name, l.resp)
	}
	cfg, err := flowschema.Decode([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestSoak drives the controller with 64 goroutines for -apf.soak requests
// (100,000 by default) from 40 users over three priority levels, with
// random work estimates (final seats included), wait limits short enough
// for time-outs, and a reconfiguration every 5,000 requests that removes
// or restores level c and resizes level a's queues. Every request must end
// exactly once (admitted and finished, or rejected with a reason), every
// level must be idle at the end with no seats held, the quiescing levels
// must be gone, no goroutine may be left, and the heap must return to
// within 2 MiB of where it started.
func TestSoak(t *testing.T) {
	defer goleak.VerifyNone(t)
	total := *soakRequests
	c, err := apf.New(soakConfig(t, true, 8), apf.Options{ServerConcurrencyLimit: 40})
	if err != nil {
		t.Fatal(err)
	}
	before := heapInUse()

	var sent, admitted, rejected atomic.Int64
	reasons := sync.Map{}
	var reconfigs atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(5 * time.Minute)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for {
				n := sent.Add(1)
				if n > int64(total) || time.Now().After(deadline) {
					return
				}
				if n%5000 == 0 {
					k := reconfigs.Add(1)
					if err := c.Reconfigure(soakConfig(t, k%2 == 0, []int{8, 3, 16}[k%3])); err != nil {
						t.Error(err)
						return
					}
				}
				level := []string{"ga", "gb", "gc"}[r.IntN(3)]
				req := &apf.Request{User: apf.User{Name: fmt.Sprint("u", r.IntN(40)), Groups: []string{level, "system:authenticated"}},
					Info: apf.RequestInfo{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Resource: "pods", Namespace: "n", Name: "p"}}
				we := fairqueue.WorkEstimate{InitialSeats: uint64(1 + r.IntN(2))}
				if r.IntN(10) == 0 {
					we.FinalSeats, we.AdditionalLatency = 3, time.Duration(r.IntN(200))*time.Microsecond
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(3000))*time.Microsecond)
				tk, err := c.Wait(ctx, req, func(*apf.Classification, uint64) fairqueue.WorkEstimate { return we })
				cancel()
				if err != nil {
					var rej *apf.RejectedError
					if !errors.As(err, &rej) {
						t.Errorf("Wait: %v", err)
						return
					}
					rejected.Add(1)
					v, _ := reasons.LoadOrStore(rej.Reason, new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
					continue
				}
				admitted.Add(1)
				for range r.IntN(50) {
					runtime.Gosched()
				}
				tk.Finish()
			}
		}()
	}
	wg.Wait()
	// Let final phases end (at most 200µs each).
	time.Sleep(50 * time.Millisecond)
	ended := admitted.Load() + rejected.Load()
	if ended != int64(total) {
		t.Errorf("%d requests sent, %d ended (%d admitted, %d rejected)", total, ended, admitted.Load(), rejected.Load())
	}
	counts := map[fairqueue.Reason]int64{}
	reasons.Range(func(k, v any) bool { counts[k.(fairqueue.Reason)] = v.(*atomic.Int64).Load(); return true })
	t.Logf("%d requests: %d admitted, %d rejected %v; %d reconfigurations", total, admitted.Load(), rejected.Load(), counts, reconfigs.Load())
	if total >= 100_000 {
		for _, r := range []fairqueue.Reason{fairqueue.ReasonQueueFull, fairqueue.ReasonConcurrencyLimit, fairqueue.ReasonTimeOut} {
			if counts[r] == 0 {
				t.Errorf("no rejection with reason %s: the soak does not exercise it", r)
			}
		}
	}
	for _, d := range c.Dump() {
		q := d.QueueSet
		if q.Waiting != 0 || q.Executing != 0 || q.SeatsInUse != 0 || q.SeatsWaiting != 0 {
			t.Errorf("level %s not drained: %+v", d.Name, q)
		}
		if d.Quiescing {
			t.Errorf("level %s still quiescing while idle", d.Name)
		}
	}
	c.Close()
	after := heapInUse()
	t.Logf("heap before %d KiB, after %d KiB", before/1024, after/1024)
	if after > before+2<<20 {
		t.Errorf("heap grew from %d to %d bytes over the soak", before, after)
	}
}
