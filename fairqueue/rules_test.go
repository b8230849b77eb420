package fairqueue

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func one() WorkEstimate { return WorkEstimate{InitialSeats: 1} }

func seats(n uint64) WorkEstimate { return WorkEstimate{InitialSeats: n} }

// newTestSet builds a QueueSet that records dispatches and verifies itself.
func newTestSet(t *testing.T, cfg Config) (*QueueSet, *[]*Request) {
	t.Helper()
	qs, err := NewQueueSet(cfg, t0)
	if err != nil {
		t.Fatalf("NewQueueSet(%+v) = %v", cfg, err)
	}
	var log []*Request
	qs.SetDispatchFunc(func(r *Request) { log = append(log, r) })
	t.Cleanup(func() {
		if err := qs.verify(); err != nil {
			t.Errorf("verify: %v", err)
		}
	})
	return qs, &log
}

func arrive(t *testing.T, qs *QueueSet, at time.Duration, hash uint64, w WorkEstimate, want Reason, wantState State) *Request {
	t.Helper()
	r := new(Request)
	if got := qs.Arrive(t0.Add(at), r, hash, w); got != want || r.State() != wantState {
		t.Fatalf("Arrive(t0+%v, %d, %+v) = %q in state %v, want %q in state %v", at, hash, w, got, r.State(), want, wantState)
	}
	if err := qs.verify(); err != nil {
		t.Fatalf("verify after Arrive: %v", err)
	}
	return r
}

func TestQueueFullOnlyWhenSeatsAreFull(t *testing.T) {
	// One queue, limit 1 seat, at most 1 waiting.
	qs, _ := newTestSet(t, Config{Queues: 1, HandSize: 1, QueueLengthLimit: 1, ConcurrencyLimit: 1})
	arrive(t, qs, 0, 7, one(), "", StateExecuting)
	arrive(t, qs, 0, 7, one(), "", StateWaiting)
	arrive(t, qs, 0, 7, one(), ReasonQueueFull, StateRejected)

	// With a seat free, a queue at (or over) its length limit still accepts.
	qs, _ = newTestSet(t, Config{Queues: 1, HandSize: 1, QueueLengthLimit: 0, ConcurrencyLimit: 2})
	arrive(t, qs, 0, 7, one(), "", StateExecuting)
	arrive(t, qs, 0, 7, seats(2), "", StateWaiting) // does not fit: 1+2 > 2
	arrive(t, qs, 0, 7, one(), "", StateWaiting)    // fits, but behind the wide head
	if c := qs.Counts(); c.Waiting != 2 || c.Rejected != 0 {
		t.Errorf("Counts() = %+v, want 2 waiting and no rejection", c)
	}
}

// TestQueueFullNamesTheFullQueue: Request.Queue() of a queue-full
// rejection is the queue that was full, the least-loaded of the hand.
func TestQueueFullNamesTheFullQueue(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 8, HandSize: 2, QueueLengthLimit: 1, ConcurrencyLimit: 1})
	const hash = 12345
	hand := qs.dealer.DealIntoHand(hash, nil)
	arrive(t, qs, 0, hash, one(), "", StateExecuting)
	w1 := arrive(t, qs, 0, hash, one(), "", StateWaiting)
	w2 := arrive(t, qs, 0, hash, one(), "", StateWaiting)
	if w1.Queue() == w2.Queue() || !slices.Contains(hand, w1.Queue()) || !slices.Contains(hand, w2.Queue()) {
		t.Fatalf("waiting requests in queues %d and %d, want both queues of the hand %v", w1.Queue(), w2.Queue(), hand)
	}
	// Both queues of the hand hold one request: the rotation picks the
	// first of the hand from the current offset.
	want := hand[3%2]
	r := arrive(t, qs, 0, hash, one(), ReasonQueueFull, StateRejected)
	if r.Queue() != want {
		t.Errorf("queue-full rejection: Queue() = %d, want %d (hand %v)", r.Queue(), want, hand)
	}
	if got := qs.Dump().Queues[r.Queue()].Waiting; len(got) != 1 {
		t.Errorf("the rejection names queue %d, which holds %d requests, not QueueLengthLimit 1", r.Queue(), len(got))
	}
}

func TestNoQueuingRejectsOverConcurrencyLimit(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 0, ConcurrencyLimit: 2})
	a := arrive(t, qs, 0, 1, one(), "", StateExecuting)
	arrive(t, qs, 0, 2, one(), "", StateExecuting)
	arrive(t, qs, 0, 3, one(), ReasonConcurrencyLimit, StateRejected)
	if a.Queue() != -1 {
		t.Errorf("Queue() = %d, want -1 without queues", a.Queue())
	}
	qs.Finish(t0, a)
	arrive(t, qs, 0, 3, one(), "", StateExecuting)
}

func TestExemptAdmitsEverythingAndCountsSeats(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: ExemptQueues, ConcurrencyLimit: 0})
	for i := 0; i < 5; i++ {
		arrive(t, qs, 0, uint64(i), seats(3), "", StateExecuting)
	}
	if c := qs.Counts(); c.SeatsInUse != 15 || c.Executing != 5 {
		t.Errorf("Counts() = %+v, want 15 seats in 5 requests", c)
	}
}

// kubernetes#134196: a zero-limit level admits one request when idle.
func TestZeroLimitAdmitsWhenIdleUnlessFixed(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 0, ConcurrencyLimit: 0})
	arrive(t, qs, 0, 1, one(), "", StateExecuting)
	arrive(t, qs, 0, 1, one(), ReasonConcurrencyLimit, StateRejected)

	qs, _ = newTestSet(t, Config{Queues: 0, ConcurrencyLimit: 0, FixZeroLimitAdmission: true})
	arrive(t, qs, 0, 1, one(), ReasonConcurrencyLimit, StateRejected)
}

func TestWideRequestRunsAlone(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 2})
	a := arrive(t, qs, 0, 1, one(), "", StateExecuting)
	wide := arrive(t, qs, 0, 1, seats(3), "", StateWaiting)
	c := arrive(t, qs, 0, 1, one(), "", StateWaiting)
	qs.Finish(t0.Add(ms(1)), a)
	if wide.State() != StateExecuting || c.State() != StateWaiting {
		t.Fatalf("after finish: wide %v, c %v; want executing, waiting", wide.State(), c.State())
	}
	if got := qs.Counts().SeatsInUse; got != 3 {
		t.Errorf("SeatsInUse = %d, want 3 (over the limit of 2, alone)", got)
	}
	qs.Finish(t0.Add(ms(2)), wide)
	if c.State() != StateExecuting {
		t.Errorf("c is %v after the wide request finished, want executing", c.State())
	}
}

func TestNoFallbackWhenWinnerDoesNotFit(t *testing.T) {
	// Two queues, hand 1: hash 0 goes to queue 0, hash 1 to queue 1.
	qs, log := newTestSet(t, Config{Queues: 2, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 2})
	a := arrive(t, qs, 0, 0, one(), "", StateExecuting) // robinIndex = 0
	b := arrive(t, qs, 0, 1, seats(2), "", StateWaiting)
	// c's finish R (G after a's G) ties with b's (2G); the tie goes to queue 1
	// (first after the robin index), whose head b does not fit: nothing is
	// dispatched although c would fit.
	c := arrive(t, qs, 0, 0, one(), "", StateWaiting)
	if b.Queue() != 1 || c.Queue() != 0 {
		t.Fatalf("queues: b %d, c %d; want 1, 0", b.Queue(), c.Queue())
	}
	if len(*log) != 1 {
		t.Fatalf("%d dispatches, want only a's", len(*log))
	}
	// a's instant finish moves queue 0 back by G, so c now wins and fits.
	qs.Finish(t0, a)
	if b.State() != StateWaiting || c.State() != StateExecuting {
		t.Errorf("after a finished: b %v, c %v; want waiting, executing", b.State(), c.State())
	}
}

func TestFinalSeatsClampedToLimit(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 2})
	r := arrive(t, qs, 0, 1, WorkEstimate{InitialSeats: 1, FinalSeats: 5, AdditionalLatency: ms(10)}, "", StateExecuting)
	if got, want := r.Work(), (WorkEstimate{InitialSeats: 1, FinalSeats: 2, AdditionalLatency: ms(25)}); got != want {
		t.Errorf("Work() = %+v, want %+v", got, want)
	}
	// Upstream subtracts the clamped seats from the waiting total, leaving 3.
	if c := qs.Counts(); c.SeatsInUse != 2 || c.SeatsWaiting != 3 {
		t.Errorf("Counts() = %+v, want 2 seats in use and SeatsWaiting 3 (upstream's drift)", c)
	}
	at, lingering := qs.Finish(t0.Add(ms(1)), r)
	if !lingering || !at.Equal(t0.Add(ms(26))) {
		t.Errorf("Finish = %v, %v; want t0+26ms, true", at, lingering)
	}
	qs.Release(at, r)
	if r.State() != StateDone || qs.Counts().SeatsInUse != 0 {
		t.Errorf("after Release: %v, %+v", r.State(), qs.Counts())
	}
}

// kubernetes#107964: no clamp without queues, unless asked for.
func TestFinalSeatsClampWithoutQueues(t *testing.T) {
	w := WorkEstimate{InitialSeats: 1, FinalSeats: 5, AdditionalLatency: ms(10)}
	qs, _ := newTestSet(t, Config{Queues: 0, ConcurrencyLimit: 2})
	if r := arrive(t, qs, 0, 1, w, "", StateExecuting); r.Work() != w {
		t.Errorf("Work() = %+v, want unclamped %+v", r.Work(), w)
	}
	qs, _ = newTestSet(t, Config{Queues: 0, ConcurrencyLimit: 2, ClampFinalSeatsWithoutQueues: true})
	want := WorkEstimate{InitialSeats: 1, FinalSeats: 2, AdditionalLatency: ms(25)}
	if r := arrive(t, qs, 0, 1, w, "", StateExecuting); r.Work() != want {
		t.Errorf("Work() = %+v, want %+v", r.Work(), want)
	}
}

func TestFinishCorrectsNextDispatchR(t *testing.T) {
	for _, tc := range []struct {
		service time.Duration
		want    string
	}{
		{ms(10), "0.01000000ss"},  // G + (10ms - G)
		{ms(1), "0.00100000ss"},   // G - (G - 1ms)
		{ms(3), "0.00300000ss"},   // exactly G
		{0, "0.00000000ss"},       // instant
		{ms(100), "0.10000000ss"}, // long
	} {
		qs, _ := newTestSet(t, Config{Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 1})
		r := arrive(t, qs, 0, 1, one(), "", StateExecuting)
		qs.Finish(t0.Add(tc.service), r)
		if got := qs.Dump().Queues[0].NextDispatchR.String(); got != tc.want {
			t.Errorf("after %v of service NextDispatchR = %s, want %s", tc.service, got, tc.want)
		}
	}
}

func TestAntiWindupBoundsNextDispatchR(t *testing.T) {
	// Queue 0 runs a 1-seat request, queue 1 a 3-seat one: R advances at
	// min(4,4)/2 = 2 seat-seconds per second.
	qs, _ := newTestSet(t, Config{Queues: 2, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 4})
	a := arrive(t, qs, 0, 0, one(), "", StateExecuting)
	arrive(t, qs, 0, 1, seats(3), "", StateExecuting)
	b := arrive(t, qs, ms(100), 0, one(), "", StateWaiting) // arrivalR = 0.2
	if got := qs.VirtualTime().String(); got != "0.20000000ss" {
		t.Fatalf("R = %s, want 0.20000000ss", got)
	}
	// Queue 0 was at G (a's dispatch), before b's arrival at 0.2: the bound
	// lifts it to 0.2 at once.
	if got := qs.Dump().Queues[0].NextDispatchR.String(); got != "0.20000000ss" {
		t.Errorf("NextDispatchR after enqueue = %s, want 0.20000000ss", got)
	}
	// a's finish after 100ms adds 97ms; b's dispatch adds G.
	qs.Finish(t0.Add(ms(100)), a)
	if b.State() != StateExecuting {
		t.Fatalf("b is %v, want executing", b.State())
	}
	if got := qs.Dump().Queues[0].NextDispatchR.String(); got != "0.30000000ss" {
		t.Errorf("NextDispatchR = %s, want 0.30000000ss", got)
	}
}

func TestEpochAdvanceWindsBackR(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 4, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 1})
	a := arrive(t, qs, 0, 0, one(), "", StateExecuting)
	// Jump R to just below the high mark (test hook), keeping the queue's
	// readings consistent with it.
	qs.currentR = highR - 1000
	qs.queues[0].nextDispatchR = highR - 1000
	qs.queues[2].nextDispatchR = 12345 // idle queue: reset to 0
	qs.reindex()
	b := arrive(t, qs, ms(1), 1, one(), "", StateWaiting) // R += 1e5 ≥ highR
	if c := qs.Counts(); c.EpochAdvances != 1 {
		t.Fatalf("EpochAdvances = %d, want 1", c.EpochAdvances)
	}
	if got, want := qs.currentR, highR-1000+100000-rDecrement; got != want {
		t.Errorf("R = %d, want %d", got, want)
	}
	if got, want := qs.queues[0].nextDispatchR, highR-1000-rDecrement; got != want {
		t.Errorf("busy queue nextDispatchR = %d, want %d", got, want)
	}
	if got := qs.queues[2].nextDispatchR; got != 0 {
		t.Errorf("idle queue nextDispatchR = %d, want 0", got)
	}
	if b.arrivalR != qs.currentR {
		t.Errorf("b.arrivalR = %d, want R %d", b.arrivalR, qs.currentR)
	}
	qs.Finish(t0.Add(ms(2)), a)
	if b.State() != StateExecuting {
		t.Errorf("b is %v after epoch advance, want executing", b.State())
	}
}

func TestReconfigureAddsAtOnceRemovesByAttrition(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 3, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 10})
	r0 := arrive(t, qs, 0, 0, one(), "", StateExecuting)
	r2 := arrive(t, qs, 0, 2, one(), "", StateExecuting)
	if err := qs.Reconfigure(t0, Config{Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 10}); err != nil {
		t.Fatal(err)
	}
	if n := qs.Counts().Queues; n != 3 {
		t.Fatalf("%d queues right after shrinking, want 3 (attrition)", n)
	}
	qs.Finish(t0, r0) // queue 0 empties and goes; queue 2 becomes 1
	if n, q := qs.Counts().Queues, r2.Queue(); n != 2 || q != 1 {
		t.Fatalf("after first finish: %d queues, r2 in queue %d; want 2, 1", n, q)
	}
	qs.Finish(t0, r2)
	if n := qs.Counts().Queues; n != 1 {
		t.Fatalf("%d queues, want 1", n)
	}
	if err := qs.Reconfigure(t0, Config{Queues: 5, HandSize: 2, QueueLengthLimit: 10, ConcurrencyLimit: 10}); err != nil {
		t.Fatal(err)
	}
	if n := qs.Counts().Queues; n != 5 {
		t.Fatalf("%d queues after growing, want 5 at once", n)
	}
}

func TestLoweringLimitPreemptsNothing(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 2, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 2})
	a := arrive(t, qs, 0, 0, one(), "", StateExecuting)
	b := arrive(t, qs, 0, 1, one(), "", StateExecuting)
	if err := qs.Reconfigure(t0, Config{Queues: 2, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 1}); err != nil {
		t.Fatal(err)
	}
	if a.State() != StateExecuting || b.State() != StateExecuting {
		t.Fatalf("states %v %v, want both executing", a.State(), b.State())
	}
	c := arrive(t, qs, 0, 0, one(), "", StateWaiting)
	qs.Finish(t0, a)
	if c.State() != StateWaiting {
		t.Errorf("c is %v with 1 of 1 seat in use, want waiting", c.State())
	}
	qs.Finish(t0, b)
	if c.State() != StateExecuting {
		t.Errorf("c is %v, want executing", c.State())
	}
}

func TestCancelWaitingTimesOut(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 1})
	a := arrive(t, qs, 0, 0, one(), "", StateExecuting)
	b := arrive(t, qs, 0, 0, one(), "", StateWaiting)
	if qs.Cancel(t0, a) {
		t.Error("Cancel(executing) = true, want false")
	}
	if !qs.Cancel(t0.Add(ms(5)), b) || b.State() != StateTimedOut || b.Reason() != ReasonTimeOut {
		t.Errorf("Cancel(waiting): state %v reason %q, want timed-out, time-out", b.State(), b.Reason())
	}
	if qs.Cancel(t0, b) {
		t.Error("second Cancel = true, want false")
	}
	if c := qs.Counts(); c.Rejected != 1 || c.Cancelled != 1 || c.TimedOut != 0 || c.Waiting != 0 {
		t.Errorf("Counts() = %+v, want Rejected 1, Cancelled 1, TimedOut 0 (as upstream)", c)
	}
}

func TestIdle(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 1})
	if !qs.IsIdle() {
		t.Fatal("new set not idle")
	}
	r := arrive(t, qs, 0, 0, WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: ms(5)}, "", StateExecuting)
	if qs.IsIdle() {
		t.Fatal("idle while executing")
	}
	at, _ := qs.Finish(t0, r)
	if !qs.IsIdle() {
		t.Error("not idle while only final seats are held (upstream counts them as idle)")
	}
	qs.Release(at, r)
}

func TestConfigValidationReportsAllProblems(t *testing.T) {
	_, err := NewQueueSet(Config{Queues: 4, HandSize: 5, QueueLengthLimit: -1, ConcurrencyLimit: -2}, t0)
	if err == nil {
		t.Fatal("NewQueueSet(invalid) = nil error")
	}
	for _, want := range []string{"HandSize=5", "QueueLengthLimit=-1", "ConcurrencyLimit=-2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	qs, _ := newTestSet(t, Config{Queues: 4, HandSize: 2, QueueLengthLimit: 1, ConcurrencyLimit: 1})
	if err := qs.Reconfigure(t0, Config{Queues: 4, HandSize: 9}); err == nil {
		t.Error("Reconfigure(invalid) = nil error")
	}
	if got := qs.Config().HandSize; got != 2 {
		t.Errorf("HandSize after failed Reconfigure = %d, want 2", got)
	}
	// Queues ≤ 0 keeps the queuing parameters, as upstream.
	if err := qs.Reconfigure(t0, Config{Queues: 0, ConcurrencyLimit: 1}); err != nil {
		t.Fatal(err)
	}
	if c := qs.Config(); c.HandSize != 2 || c.QueueLengthLimit != 1 {
		t.Errorf("Config() = %+v, want HandSize 2 and QueueLengthLimit 1 kept", c)
	}
}

func TestSeatSecondsArithmetic(t *testing.T) {
	for _, tc := range []struct {
		seats float64
		d     time.Duration
		want  SeatSeconds
		str   string
	}{
		{1, ms(3), 300000, "0.00300000ss"},
		{2.5, 15, 4, "0.00000004ss"}, // 3.75 rounds to 4
		{1, 5, 1, "0.00000001ss"},    // 0.5 rounds away from zero
		{3, time.Second, 300000000, "3.00000000ss"},
	} {
		if got := SeatsTimesDuration(tc.seats, tc.d); got != tc.want || got.String() != tc.str {
			t.Errorf("SeatsTimesDuration(%v, %v) = %d (%s), want %d (%s)", tc.seats, tc.d, got, got, tc.want, tc.str)
		}
	}
	if got := SeatsTimesDuration(1, -ms(3)); got != MaxSeatSeconds-300000+1 {
		t.Errorf("negative product = %d, want wrap-around of -300000", got)
	}
	if got := SeatSeconds(5000000).DurationPerSeat(2); got != ms(25) {
		t.Errorf("DurationPerSeat = %v, want 25ms", got)
	}
}

type recordingObserver struct {
	events []string
}

func describeReq(r RequestInfo) string {
	return fmt.Sprintf("%s/%s#%x q%d", r.FlowSchema, r.FlowDistinguisher, r.Hash, r.Queue)
}

func (o *recordingObserver) Rejected(r RequestInfo, reason Reason) {
	o.events = append(o.events, "rejected "+describeReq(r)+" "+string(reason))
}
func (o *recordingObserver) Cancelled(r RequestInfo, expired bool) {
	o.events = append(o.events, fmt.Sprintf("cancelled %s expired=%v", describeReq(r), expired))
}
func (o *recordingObserver) Enqueued(r RequestInfo, n int) {
	o.events = append(o.events, "enqueued "+describeReq(r)+" "+itoa(n))
}
func (o *recordingObserver) Dispatched(r RequestInfo, w time.Duration) {
	o.events = append(o.events, "dispatched "+describeReq(r)+" after "+w.String())
}
func (o *recordingObserver) SeatsChanged(e, w int) {
	o.events = append(o.events, "seats "+itoa(e)+"/"+itoa(w))
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestObserverEvents checks the events, their order, and the flow and
// queue they carry: the queue of a queue-full rejection is the full queue.
func TestObserverEvents(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 4, HandSize: 1, QueueLengthLimit: 1, ConcurrencyLimit: 1})
	o := &recordingObserver{}
	qs.SetObserver(o)
	flow := func(_ uint64, name string) *Request {
		return &Request{Flow: Flow{FlowSchema: "fs", FlowDistinguisher: name, Key: name}}
	}
	at := func(r *Request, d time.Duration, hash uint64, want Reason) *Request {
		if got := qs.Arrive(t0.Add(d), r, hash, one()); got != want {
			t.Fatalf("Arrive(%s) = %q, want %q", r.FlowDistinguisher, got, want)
		}
		return r
	}
	a := at(flow(0, "a"), 0, 0, "")
	b := at(flow(0, "b"), 0, 0, "")
	at(flow(0, "c"), 0, 0, ReasonQueueFull)
	d := at(flow(3, "d"), 0, 3, "")
	e := at(flow(1, "e"), 0, 1, "")
	qs.Expire(t0.Add(ms(1)), d)
	qs.Cancel(t0.Add(ms(1)), e)
	qs.Finish(t0.Add(ms(2)), a)
	qs.Finish(t0.Add(ms(3)), b)
	want := []string{
		"seats 0/1", "enqueued fs/a#0 q0 1", "seats 1/0", "dispatched fs/a#0 q0 after 0s",
		"seats 1/1", "enqueued fs/b#0 q0 1",
		"rejected fs/c#0 q0 queue-full",
		"seats 1/2", "enqueued fs/d#3 q3 1",
		"seats 1/3", "enqueued fs/e#1 q1 1",
		"cancelled fs/d#3 q3 expired=true", "seats 1/2",
		"cancelled fs/e#1 q1 expired=false", "seats 1/1",
		"seats 0/1", "seats 1/0", "dispatched fs/b#0 q0 after 2ms",
		"seats 0/0",
	}
	if diff := cmp.Diff(want, o.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if c := qs.Counts(); c.Rejected != 3 || c.Cancelled != 2 || c.WaitLimitExpired != 1 || c.CallerCancelled != 1 || c.TimedOut != 0 {
		t.Errorf("Counts() = %+v, want Rejected 3, Cancelled 2 = 1 expired + 1 caller-cancelled, TimedOut 0", c)
	}
}

func TestWritePriorityLevel(t *testing.T) {
	qs, _ := newTestSet(t, Config{Name: "global-default", Queues: 4, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 1})
	arrive(t, qs, 0, 0, one(), "", StateExecuting)
	arrive(t, qs, 0, 1, one(), "", StateWaiting)
	arrive(t, qs, 0, 2, one(), "", StateWaiting)
	var sb strings.Builder
	d := qs.Dump()
	if err := d.WritePriorityLevel(&sb); err != nil {
		t.Fatal(err)
	}
	want := "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests\n" +
		"global-default,    2,            false,  false,       2,               1,                 1,                  0,                0,                0\n"
	if sb.String() != want {
		t.Errorf("WritePriorityLevel =\n%s\nwant\n%s", sb.String(), want)
	}
}

// TestCoreDoesNotAllocate guards the 0-allocation promise for a request
// that dispatches at once and for one that waits.
func TestCoreDoesNotAllocate(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 128, HandSize: 8, QueueLengthLimit: 50, ConcurrencyLimit: 1})
	qs.SetDispatchFunc(nil)
	var a, b Request
	now := t0
	immediate := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Microsecond)
		qs.Arrive(now, &a, 12345, one())
		qs.Finish(now, &a)
	})
	pa, pb := &a, &b
	qs.Arrive(now, pa, 1, one())
	waiting := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Microsecond)
		qs.Arrive(now, pb, 99, one()) // waits behind a
		qs.Finish(now, pa)            // dispatches b
		if pb.State() != StateExecuting {
			t.Fatalf("waiting request is %v after the finish, want executing", pb.State())
		}
		pa, pb = pb, pa
	})
	qs.Finish(now, pa)
	if immediate != 0 || waiting != 0 {
		t.Errorf("allocations per request: immediate %v, waiting %v; want 0, 0", immediate, waiting)
	}
}

// Upstream removes a surplus queue by the index it last had. When a request
// lingers in its final phase in a queue that was already removed, its
// release removes whichever queue now has that index, even a busy one.
func TestStaleQueueRemovalAsUpstream(t *testing.T) {
	qs, _ := newTestSet(t, Config{Queues: 3, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 10})
	a := arrive(t, qs, 0, 1, WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: ms(5)}, "", StateExecuting)
	b := arrive(t, qs, 0, 1, one(), "", StateExecuting)
	c := arrive(t, qs, 0, 2, one(), "", StateExecuting)
	if err := qs.Reconfigure(t0, Config{Queues: 1, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 10}); err != nil {
		t.Fatal(err)
	}
	at, _ := qs.Finish(t0, a) // a lingers in queue 1
	qs.Finish(t0, b)          // queue 1 empties and goes; c's queue becomes 1
	if n, q := qs.Counts().Queues, c.Queue(); n != 2 || q != 1 {
		t.Fatalf("%d queues, c in queue %d; want 2, 1", n, q)
	}
	qs.Release(at, a) // a's queue had index 1: the queue now at 1 (c's) goes
	if n := qs.Counts().Queues; n != 1 {
		t.Fatalf("%d queues after the stale removal, want 1", n)
	}
	if err := qs.verify(); err != nil {
		t.Fatal(err)
	}
	qs.Finish(at, c) // c still finishes normally in its removed queue
	if c.State() != StateDone || !qs.IsIdle() || qs.Counts().SeatsInUse != 0 {
		t.Errorf("after c: %v, %+v; want done and idle", c.State(), qs.Counts())
	}
}

// The minimal trace of kube/verify/compare/fairqueue/testdata/
// upstream-panic-stale-queue-removal.json: L lingers in the queue it shares
// with M, W waits in another queue, and the queues are cut to one. M's
// finish removes L's queue, which shifts W's queue to L's old index, so L's
// release removes W's queue. As upstream (which then crashes) W is stranded
// until cancelled; with FixStaleQueueRemoval L's release removes nothing
// and W is dispatched as soon as the seats are free.
func TestFixStaleQueueRemovalDispatchesStrandedRequest(t *testing.T) {
	for _, fix := range []bool{false, true} {
		t.Run(strconv.FormatBool(fix), func(t *testing.T) {
			cfg := Config{Queues: 3, HandSize: 1, QueueLengthLimit: 10, ConcurrencyLimit: 2, FixStaleQueueRemoval: fix}
			qs, log := newTestSet(t, cfg)
			l := arrive(t, qs, 0, 0, WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: 2 * time.Second}, "", StateExecuting)
			m := arrive(t, qs, 0, 0, one(), "", StateExecuting)
			w := arrive(t, qs, ms(200), 1, seats(2), "", StateWaiting)
			if l.Queue() != m.Queue() || l.Queue() >= w.Queue() {
				t.Fatalf("queues L %d, M %d, W %d; want L and M together before W", l.Queue(), m.Queue(), w.Queue())
			}
			cfg.Queues = 1
			if err := qs.Reconfigure(t0.Add(ms(500)), cfg); err != nil {
				t.Fatal(err)
			}
			at, lingering := qs.Finish(t0.Add(time.Second), l)
			if !lingering || at != t0.Add(3*time.Second) {
				t.Fatalf("Finish(L) = %v, %v; want t0+3s, true", at.Sub(t0), lingering)
			}
			qs.Finish(t0.Add(2*time.Second), m) // L's queue empties and goes
			if n := qs.Counts().Queues; n != 2 {
				t.Fatalf("%d queues after M finished, want 2", n)
			}
			qs.Release(at, l)
			if err := qs.verify(); err != nil {
				t.Fatal(err)
			}
			c := qs.Counts()
			if !fix {
				// W's queue was removed in place of L's.
				if w.State() != StateWaiting || c.Queues != 1 || c.SeatsInUse != 0 || qs.strandedWaiting() != 1 {
					t.Fatalf("after L's release: W %v, %d queues, %d seats in use, %d stranded; want waiting, 1, 0, 1",
						w.State(), c.Queues, c.SeatsInUse, qs.strandedWaiting())
				}
				// Nothing ever dispatches W; it leaves only by time-out.
				if err := qs.Reconfigure(t0.Add(time.Hour), cfg); err != nil {
					t.Fatal(err)
				}
				if w.State() != StateWaiting {
					t.Fatalf("W is %v an hour later, want still waiting", w.State())
				}
				if !qs.Cancel(t0.Add(time.Hour), w) || w.Reason() != ReasonTimeOut {
					t.Fatalf("Cancel(W) did not time it out: %v %q", w.State(), w.Reason())
				}
			} else {
				if w.State() != StateExecuting || w.StartTime() != at || c.Queues != 2 || qs.strandedWaiting() != 0 {
					t.Fatalf("after L's release: W %v started at %v, %d queues, %d stranded; want executing at t0+3s, 2, 0",
						w.State(), w.StartTime().Sub(t0), c.Queues, qs.strandedWaiting())
				}
				qs.Finish(at.Add(time.Second), w) // W's queue, now empty, goes
				if n := qs.Counts().Queues; n != 1 {
					t.Fatalf("%d queues after W finished, want 1", n)
				}
			}
			want := []*Request{l, m}
			if fix {
				want = append(want, w)
			}
			if !slices.Equal(*log, want) {
				t.Errorf("dispatched %d requests, want %d (L, M, and W only with the fix)", len(*log), len(want))
			}
			if !qs.IsIdle() {
				t.Errorf("not idle at the end: %+v", qs.Counts())
			}
		})
	}
}

func TestSeatSecondsString(t *testing.T) {
	for _, ss := range []SeatSeconds{0, 1, 99999999, 100000000, 300000, 123456789012, highR, MaxSeatSeconds} {
		want := fmt.Sprintf("%d.%08dss", ss/1e8, ss%1e8)
		if got := ss.String(); got != want {
			t.Errorf("SeatSeconds(%d).String() = %q, want %q", uint64(ss), got, want)
		}
	}
}

// TestFlowHoldsAtMostHandTimesQueueLength backs the package doc: with every
// seat taken, one flow can have at most HandSize × QueueLengthLimit
// requests waiting (all the queues of its hand full), and no more whatever
// it sends; requests of other flows sharing those queues only lower that.
func TestFlowHoldsAtMostHandTimesQueueLength(t *testing.T) {
	for _, c := range []struct{ queues, hand, qll, limit int }{{16, 4, 3, 2}, {64, 8, 50, 8}, {128, 6, 50, 1}} {
		qs, _ := newTestSet(t, Config{Queues: c.queues, HandSize: c.hand, QueueLengthLimit: c.qll, ConcurrencyLimit: c.limit})
		rejected := 0
		for i := 0; i < c.limit+c.hand*c.qll+10; i++ {
			if qs.Arrive(t0, new(Request), 99, one()) != "" {
				rejected++
			}
		}
		if got := qs.Counts(); got.Executing != c.limit || got.Waiting != c.hand*c.qll || rejected != 10 {
			t.Errorf("%+v: %d executing, %d waiting, %d rejected; want %d, HandSize × QueueLengthLimit = %d, 10",
				c, got.Executing, got.Waiting, rejected, c.limit, c.hand*c.qll)
		}
	}
}
