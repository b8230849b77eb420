// Package fairqueue is the fair-queuing dispatcher of Kubernetes API
// Priority and Fairness (APF), pulled out of k8s.io/apiserver and made
// deterministic and fast.
//
// # Model
//
// A queue set serves one priority level. It has a concurrency limit in
// seats. Each request carries a flow hash and a work estimate (initial
// seats, final seats, and how long the final seats are held after the
// request finishes). In queuing mode the hash deals a hand of queues by
// shuffle sharding (package shufflesharding); the request joins the queue
// of the hand with the least waiting work, visiting the hand from a start
// that rotates with every arrival. It is rejected with "queue-full" only
// when every seat is taken and that queue already holds QueueLengthLimit
// requests.
//
// Requests leave their queues in virtual-time fair order. The virtual clock
// R advances at min(seats requested, limit)/active queues seat-seconds per
// second. Each queue has a next dispatch time in R; its head's virtual
// finish time is that plus the head's work (initial seats × G + final seats
// × additional latency, G = 3 ms). The queue with the smallest finish time
// goes next, ties broken round-robin after the last queue served; if its
// head does not fit in the free seats, nothing is dispatched (no fallback
// to a narrower request). A request wider than the whole limit runs only
// when nothing else executes. On finish, a queue's next dispatch time is
// corrected by the difference between G and the real service time, and
// never falls below its head's arrival in R (anti-windup). R is wound back
// by half its range when it gets large (epoch advance).
//
// With Queues == 0 there is no queuing: a request runs if it fits and is
// rejected with "concurrency-limit" otherwise. With Queues < 0 (exempt)
// every request runs at once. A waiting request whose context ends is
// removed with "time-out".
//
// # What a flow gets
//
// A flow (requests with the same hash) can hold at most HandSize ×
// QueueLengthLimit waiting requests: its requests only ever join the
// queues of its hand, and a queue turns arrivals away (queue-full) once it
// holds QueueLengthLimit requests while every seat is taken. Other flows
// whose hands overlap share those queues and lower the figure; executing
// requests (up to ConcurrencyLimit seats) come on top. Beyond that a noisy
// flow is rejected, and its backlog cannot grow without bound.
//
// A quiet flow next to a noisy one still waits a little, up to about one
// service time. Its request arrives at an idle queue, so its virtual start
// is the current R and its virtual finish R + G. The noisy flow keeps up to
// HandSize queues backlogged; they are served at the rate R advances, so
// their next dispatch R stays at or just below R, and the heads of those
// lagging behind go first. Nothing is preempted, so the quiet request
// waits for those dispatches, one per freed seat, then for its own seat: up
// to about (HandSize + 1) × service time / ConcurrencyLimit, one service
// time when HandSize is close to ConcurrencyLimit. Measured with the
// Limiter (BenchmarkLimiterNoisyNeighbour: 8 seats, a handler sleeping
// 15–25 ms, a noisy flow of 32 clients, four quiet flows of one client
// each, 64 queues): with a hand of 8 a quiet request waits 4.4 ms at the
// median (25.6 ms from arrival to response, against 108 ms for the noisy
// flow), with a hand of 2, 2.2 ms. In simulated time (TestQuietFlowWait)
// the median, 90th percentile and maximum are 4.4, 11.7 and 19.8 ms with a
// hand of 8, and 1.9, 5.5 and 13.5 ms with a hand of 2. With a handler of
// exactly 20 ms and fixed think times, seats tend to free in step, and the
// wait is then set by phase: about 10 ms in every configuration above.
//
// The knobs, all in Config:
//   - HandSize: the noisy flow occupies at most HandSize queues, so a
//     smaller hand puts fewer noisy heads ahead of a quiet request (at the
//     price of more collisions between flows: see
//     shufflesharding.SquishProbability);
//   - ConcurrencyLimit: more seats free more often, shortening each step;
//   - QueueLengthLimit and Queues: they bound what a flow can hold and how
//     often flows share queues, not the wait of a quiet flow that shares
//     none;
//   - ServiceDuration (G, upstream's 3 ms): the estimate charged at
//     dispatch; the difference with the real service time is booked at
//     finish. Setting it to the real service time changes little here
//     (5.4 ms median in simulated time with a hand of 8).
//
// # Shape
//
// QueueSet is the deterministic core: no goroutines, no clock, no locks;
// every method takes now, in the style of x/time/rate's AllowN(t, n).
// Requests are caller-owned *Request handles, so a request costs no
// allocations. Dispatches are reported synchronously in order, final-seat
// releases are scheduled by the caller (Finish returns when; the caller
// calls Release then), which makes the core suitable for discrete-event
// simulation and for differential testing against upstream.
//
// Limiter is the thin concurrent shell for servers: a mutex around a
// QueueSet, blocking in the caller's goroutine with a context, an
// injectable Clock, timers it owns for final seats and wait limits, and an
// Observer for metrics that is called outside the lock, in order. It is
// what a server puts in front of its handlers:
//   - WaitFlow/DoFlow take the request's Flow (hash, FlowSchema and
//     distinguisher names, an opaque Key), which Dump and Observer events
//     carry along with the queue index, so per-flow metrics need nothing
//     else;
//   - every WorkEstimate is validated (WorkEstimate.Validate: at least one
//     initial seat, at most MaxWorkSeats, a latency in [0,
//     MaxAdditionalLatency]);
//   - a context that has already ended is returned at once without
//     arriving, so no seat goes to a client that is gone;
//   - a request whose context has no deadline waits at most
//     LimiterOptions.WaitLimit (DefaultWaitLimit, upstream's 15 s, unless
//     set; UpstreamWaitLimit gives upstream's rule for a context with a
//     deadline: a quarter of the time left, at most one minute);
//   - Close (or Shutdown, which also waits for executing requests) ends
//     every waiting request with ErrClosed and leaves no seat, timer or
//     goroutine behind.
//
// Dump gives upstream's dump_queues / dump_requests information and writes
// it in the debug endpoints' text format. DemandStats integrates the seat
// demand (seats in use plus waiting) as upstream's seat-demand integrator
// does for concurrency borrowing.
//
// # Compatibility with Kubernetes
//
// Decisions match k8s.io/apiserver v0.37.2's queueset bit for bit for the
// same calls at the same times: queue choice, reject reasons, dispatch
// order, R arithmetic (SeatSeconds fixed point with upstream's float64
// rounding), robin index handling, removal of surplus queues by attrition
// (indexes shift), the final-seats clamp and the epoch advance. R is
// advanced exactly at the calls that take a time, as upstream advances it
// whenever it takes its lock. Known upstream quirks are reproduced by
// default:
//   - a zero-limit level admits a request when nothing executes
//     (kubernetes#134196; Config.FixZeroLimitAdmission turns it off);
//   - the final-seats clamp is skipped without queues (kubernetes#107964;
//     Config.ClampFinalSeatsWithoutQueues applies it);
//   - SeatsWaiting drifts up when the clamp lowers a request's seats;
//   - Counts.TimedOut is always 0 and every removal from a queue counts in
//     Cancelled and Rejected (Counts.WaitLimitExpired and CallerCancelled
//     split them by cause);
//   - a surplus queue is removed by the index it last had, even if it was
//     already removed while a request lingered in its final phase, which
//     can remove a queue with waiting requests and strand them (upstream
//     then crashes at its next dispatch; Config.FixStaleQueueRemoval
//     removes nothing in that case).
//
// Work estimates: the core accepts any WorkEstimate, as upstream does, but
// lowers seat counts above MaxWorkSeats to it and raises a negative
// AdditionalLatency to 0, where upstream's would wrap around or corrupt its
// arithmetic; Limiter rejects all of these, and 0 initial seats, with an
// error (WorkEstimate.Validate).
//
// Deliberate differences: upstream's cost is dominated by debug logging and
// three scans over all queues per request; here the R rate is kept
// incrementally and the next queue is found with a tournament tree that
// reproduces the round-robin tie rule, so a request costs O(hand + log
// queues). Where upstream would crash (a stale queue index out of range, or
// only requests in removed queues left waiting) the QueueSet does nothing.
// Counts.Dispatched counts every dispatch (upstream counts the calls its
// HTTP filter makes). Cancellation is an explicit call rather than a
// context watched by a promise.
package fairqueue
