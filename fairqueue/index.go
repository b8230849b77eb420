package fairqueue

// dispatchIndex finds the queue to dispatch from without scanning all
// queues. It is a tournament tree (segment tree of minima) over queue
// indexes whose leaf i holds the virtual finish time of queue i's head
// request (nextDispatchR + head work), or MaxSeatSeconds when the queue has
// no waiting request.
//
// Upstream scans the queues cyclically starting after robinIndex and keeps
// the first strictly smallest finish time. The same queue is the first one
// at or after the scan start, cyclically, among those whose key equals the
// global minimum; pick finds it in O(log n) by two descents. A key equal to
// MaxSeatSeconds can never win upstream's strict comparison, so it doubles
// as "nothing to dispatch".
//
// set is O(log n); reset is O(n) and happens only when queues are added or
// removed and on epoch advance.
type dispatchIndex struct {
	size int           // number of leaves, a power of two
	tree []SeatSeconds // tree[1] is the root; leaves at [size, 2·size)
}

// reset sizes the index for n queues, all without waiting requests.
func (x *dispatchIndex) reset(n int) {
	size := 1
	for size < n {
		size <<= 1
	}
	x.size = size
	if cap(x.tree) >= 2*size {
		x.tree = x.tree[:2*size]
	} else {
		x.tree = make([]SeatSeconds, 2*size)
	}
	for i := range x.tree {
		x.tree[i] = MaxSeatSeconds
	}
}

// setLeaf sets leaf i without updating its ancestors (for bulk loads).
func (x *dispatchIndex) setLeaf(i int, key SeatSeconds) { x.tree[x.size+i] = key }

// rebuild recomputes every inner node from the leaves.
func (x *dispatchIndex) rebuild() {
	for i := x.size - 1; i >= 1; i-- {
		x.tree[i] = min(x.tree[2*i], x.tree[2*i+1])
	}
}

// set changes leaf i to key.
func (x *dispatchIndex) set(i int, key SeatSeconds) {
	p := x.size + i
	if x.tree[p] == key {
		return
	}
	x.tree[p] = key
	for p > 1 {
		p >>= 1
		m := min(x.tree[2*p], x.tree[2*p+1])
		if x.tree[p] == m {
			return
		}
		x.tree[p] = m
	}
}

// key returns leaf i.
func (x *dispatchIndex) key(i int) SeatSeconds { return x.tree[x.size+i] }

// pick returns the index of the queue upstream's scan would choose when it
// starts at index start, or -1 if no queue has a finite key.
func (x *dispatchIndex) pick(start int) int {
	t, size := x.tree, x.size
	m := t[1]
	if m == MaxSeatSeconds {
		return -1
	}
	// Climb from leaf start until a right sibling holds the minimum, then
	// descend to its leftmost such leaf; if none, wrap around to the
	// leftmost leaf overall.
	i := size + start
	if t[i] == m {
		return start
	}
	for {
		if i&1 == 0 && t[i|1] == m {
			i |= 1
			break
		}
		i >>= 1
		if i <= 1 {
			i = 1
			break
		}
	}
	for i < size {
		i <<= 1
		if t[i] != m {
			i |= 1
		}
	}
	return i - size
}
