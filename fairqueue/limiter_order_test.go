package fairqueue

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// gaugeObserver drives a gauge from SeatsChanged, as a metrics layer
// would, and yields inside the call so that concurrent deliveries
// interleave as much as possible.
type gaugeObserver struct {
	NopObserver
	mu                 sync.Mutex
	executing, waiting int
}

func (o *gaugeObserver) SeatsChanged(executing, waiting int) {
	runtime.Gosched()
	o.mu.Lock()
	o.executing, o.waiting = executing, waiting
	o.mu.Unlock()
	runtime.Gosched()
}

// TestLimiterObserverOrder: events from different goroutines reach the
// Observer in the order they happened, so a gauge driven by them ends at
// the true value once every call has returned. (Delivering each call's
// events after its own unlock, as the first Limiter did, let a stale batch
// overtake a newer one: the gauge ended non-zero on an idle Limiter in
// about a third of the rounds.)
func TestLimiterObserverOrder(t *testing.T) {
	const rounds, goroutines, calls = 100, 8, 10
	deadline := time.Now().Add(20 * time.Second)
	for round := range rounds {
		if time.Now().After(deadline) {
			t.Fatalf("round %d: out of time", round)
		}
		obs := &gaugeObserver{}
		l, err := NewLimiter(Config{Queues: 8, HandSize: 2, QueueLengthLimit: 100, ConcurrencyLimit: 2}, LimiterOptions{Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range calls {
					if err := l.Do(ctx, uint64(g*calls+i), WorkEstimate{InitialSeats: 1}, runtime.Gosched); err != nil {
						t.Errorf("Do = %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		cancel()
		c := l.Counts()
		l.Close()
		obs.mu.Lock()
		e, w := obs.executing, obs.waiting
		obs.mu.Unlock()
		if e != c.SeatsInUse || w != c.SeatsWaiting {
			t.Fatalf("round %d: gauge ended at %d executing, %d waiting; the Limiter has %d, %d", round, e, w, c.SeatsInUse, c.SeatsWaiting)
		}
	}
}
