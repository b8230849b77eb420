package fairqueue

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// Ports of upstream's windup and exempt fairness scenarios
// (queueset_test.go TestWindup and TestExampt), replayed through the
// discrete-event driver of simulation_test.go.

// checkAverages compares each client's average executing seats with the
// expected value the way upstream's evaluation does: relative to a positive
// expectation, absolutely otherwise. wantWithin says whether every client is
// expected inside the margin (true) or outside it (false).
func checkAverages(t *testing.T, name string, got, want []float64, margin float64, wantWithin bool) {
	t.Helper()
	for i := range got {
		var within bool
		if want[i] > 0 {
			within = math.Abs(got[i]-want[i])/want[i] <= margin
		} else {
			within = math.Abs(got[i]) <= margin
		}
		if within != wantWithin {
			t.Errorf("%s: client %d averaged %.10g seats, want %.10g; within %g = %v, want %v", name, i, got[i], want[i], margin, within, wantWithin)
		} else {
			t.Logf("%s: client %d averaged %.10g seats, expected %.10g (within %g = %v)", name, i, got[i], want[i], margin, within)
		}
	}
}

// TestWindup is upstream's windup scenario. Client 1 runs only half its
// threads during the first half, so its queue falls behind in virtual time
// while it cannot use its share; when the other threads start, the
// anti-windup rule limits, but does not remove, the advantage this gives
// it. The first half must be fair (2 and 1 seats); in the second half the
// fair shares are 1.5 and 1.5 and, as upstream, the result must be within
// 26% of them but not within 10%.
func TestWindup(t *testing.T) {
	for _, tc := range []struct {
		name        string
		margin2     float64
		wantWithin2 bool
	}{
		{name: "upper-bound", margin2: 0.26, wantWithin2: true},
		{name: "lower-bound", margin2: 0.10, wantWithin2: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Name: "TestWindup/" + tc.name, Queues: 9, HandSize: 1, QueueLengthLimit: 6, ConcurrencyLimit: 3}
			res := runUniform(t, cfg, []uniformClient{
				newUniformClient(1001001001, 2, 40, time.Second, -1),
				newUniformClient(2002002002, 2, 40, time.Second, -1).splitHalf(),
			}, 40*time.Second)
			if res.firstHalf == nil {
				t.Fatal("runUniform with a split client returned no first-half result")
			}
			checkAverages(t, "first half", res.firstHalf.averages, res.firstHalf.fair, 0.01, true)
			checkAverages(t, "second half", res.averages, res.fair, tc.margin2, tc.wantWithin2)
			if res.rejected != 0 {
				t.Errorf("%d requests rejected, want none", res.rejected)
			}
		})
	}
}

// TestExempt is upstream's exempt scenario: an exempt queue set runs every
// request at once whatever its concurrency limit, so five threads of
// 3-seat requests, each executing half the time, average exactly 7.5 seats.
func TestExempt(t *testing.T) {
	for _, limit := range []int{0, 2} {
		t.Run(fmt.Sprintf("concurrency=%d", limit), func(t *testing.T) {
			cfg := Config{Name: "TestExempt", Queues: ExemptQueues, HandSize: 3, QueueLengthLimit: 2, ConcurrencyLimit: limit}
			res := runUniform(t, cfg, []uniformClient{
				newUniformClient(1001001001, 5, 20, time.Second, time.Second).width(3),
			}, 40*time.Second)
			checkAverages(t, "exempt", res.averages, []float64{7.5}, 1e-8, true)
			if res.rejected != 0 {
				t.Errorf("%d requests rejected, want none", res.rejected)
			}
		})
	}
}
