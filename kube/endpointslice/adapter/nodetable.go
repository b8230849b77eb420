package adapter

import "hash/maphash"

// nodeTable finds the found nodes a Converter remembers by name. It is an
// open-addressing table, probed once per converted pod: cheaper than the
// map that holds the same nodes (and the missing ones) for revalidation.
// The zero value is empty.
type nodeTable struct {
	seed  maphash.Seed
	slots []nodeMemo // a power of two long, at most half full; found is false in an empty slot
	n     int
}

// get returns the node called name, if it was put.
func (t *nodeTable) get(name string) (nodeMemo, bool) {
	if t.n == 0 {
		return nodeMemo{}, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := maphash.String(t.seed, name) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if !s.found {
			return nodeMemo{}, false
		}
		if s.name == name {
			return *s, true
		}
	}
}

// put adds node, which is found and not in t.
func (t *nodeTable) put(node nodeMemo) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		if t.n == 0 {
			t.seed = maphash.MakeSeed()
		}
		t.slots = make([]nodeMemo, max(16, 2*len(old)))
		t.n = 0
		for _, s := range old {
			if s.found {
				t.insert(s)
			}
		}
	}
	t.insert(node)
}

func (t *nodeTable) insert(node nodeMemo) {
	mask := uint64(len(t.slots) - 1)
	i := maphash.String(t.seed, node.name) & mask
	for t.slots[i].found {
		i = (i + 1) & mask
	}
	t.slots[i] = node
	t.n++
}

// reset empties t.
func (t *nodeTable) reset() {
	*t = nodeTable{}
}
