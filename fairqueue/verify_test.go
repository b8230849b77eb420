package fairqueue

import (
	"fmt"
)

// verify checks the QueueSet's internal invariants and returns the first
// violation found.
func (qs *QueueSet) verify() error {
	waiting, executing, seatsInUse, requested, active := 0, 0, 0, 0, 0
	seen := map[*Request]bool{}
	for i, q := range qs.queues {
		if q.index != i || !q.attached {
			return fmt.Errorf("queue at %d has index %d, attached %v", i, q.index, q.attached)
		}
		init, maxs, work, n := 0, 0, SeatSeconds(0), 0
		var prev *Request
		for r := q.waiting.head; r != nil; r = r.next {
			if seen[r] {
				return fmt.Errorf("request %p listed twice", r)
			}
			seen[r] = true
			if r.state != StateWaiting || r.queue != q || r.prev != prev {
				return fmt.Errorf("queue %d: waiting request in state %v / wrong queue / broken links", i, r.state)
			}
			prev = r
			init += int(r.work.InitialSeats)
			maxs += r.maxSeats()
			work += r.totalWork
			n++
		}
		if n != q.waiting.n || q.waiting.tail != prev {
			return fmt.Errorf("queue %d: waiting list has %d requests, count says %d", i, n, q.waiting.n)
		}
		if init != q.initialSeatsSum || maxs != q.maxSeatsSum || work != q.totalWorkSum {
			return fmt.Errorf("queue %d: sums (%d,%d,%v), recomputed (%d,%d,%v)", i, q.initialSeatsSum, q.maxSeatsSum, q.totalWorkSum, init, maxs, work)
		}
		// An epoch advance can wrap readings taken long ago, so the bound is
		// checked only before the first one.
		if h := q.waiting.head; h != nil && qs.epochAdvances == 0 && q.nextDispatchR < h.arrivalR {
			return fmt.Errorf("queue %d: nextDispatchR %v before head arrival %v (anti-windup)", i, q.nextDispatchR, h.arrivalR)
		}
		ne := 0
		for r := q.executing.head; r != nil; r = r.next {
			if seen[r] {
				return fmt.Errorf("request %p listed twice", r)
			}
			seen[r] = true
			if r.state != StateExecuting || r.queue != q {
				return fmt.Errorf("queue %d: executing request in state %v", i, r.state)
			}
			ne++
		}
		if ne != q.executing.n {
			return fmt.Errorf("queue %d: executing list has %d, count %d", i, ne, q.executing.n)
		}
		if q.seatsInUse < 0 {
			return fmt.Errorf("queue %d: seatsInUse %d", i, q.seatsInUse)
		}
		waiting += n
		executing += ne
		requested += q.seatsInUse + q.maxSeatsSum
		if q.active() {
			active++
		}
		if got, want := qs.index.key(i), q.finishR(); got != want && q != qs.deferred {
			return fmt.Errorf("index leaf %d = %v, want %v", i, got, want)
		}
	}
	for r := qs.queueless.head; r != nil; r = r.next {
		if r.state != StateExecuting || r.queue != nil {
			return fmt.Errorf("queueless request in state %v", r.state)
		}
		executing++
		seatsInUse += r.maxSeats()
	}
	for i := len(qs.queues); i < qs.index.size; i++ {
		if qs.index.key(i) != MaxSeatSeconds {
			return fmt.Errorf("unused index leaf %d = %v", i, qs.index.key(i))
		}
	}
	for i := 1; i < qs.index.size; i++ {
		if qs.index.tree[i] != min(qs.index.tree[2*i], qs.index.tree[2*i+1]) {
			return fmt.Errorf("index node %d inconsistent", i)
		}
	}
	// Orphans: requests waiting/executing in removed queues are not reachable
	// here, so totals may exceed the reachable sums only by them.
	if waiting > qs.totWaiting || executing > qs.totExecuting {
		return fmt.Errorf("reachable waiting %d executing %d, totals %d %d", waiting, executing, qs.totWaiting, qs.totExecuting)
	}
	if requested != qs.seatsRequested || active != qs.activeQueues {
		return fmt.Errorf("seatsRequested %d / activeQueues %d, recomputed %d / %d", qs.seatsRequested, qs.activeQueues, requested, active)
	}
	if qs.robinIndex < -1 || qs.robinIndex >= max(len(qs.queues), 1) {
		return fmt.Errorf("robinIndex %d out of range for %d queues", qs.robinIndex, len(qs.queues))
	}
	if qs.totSeatsInUse < 0 || qs.totWaiting < 0 || qs.totExecuting < 0 {
		return fmt.Errorf("negative totals %+v", qs.Counts())
	}
	return nil
}

// strandedWaiting is the number of waiting requests whose queue is no
// longer in the set: upstream's stale removal can leave them there, and
// they then never dispatch.
func (qs *QueueSet) strandedWaiting() int {
	n := qs.totWaiting
	for _, q := range qs.queues {
		n -= q.waiting.n
	}
	return n
}
