package adapter

import "math/bits"

// nodeTable finds the nodes a Converter looked up, found or not, by name.
// It is an open-addressing table probed once per converted pod, with a
// hash of the name's 8-byte words: cheaper than the map that holds the
// same nodes for revalidation, whose lookup costs more. The hash is not
// seeded: node names are the cluster's own, the table is at most half
// full, and a Converter's behaviour stays the same from run to run.
// The zero value is empty.
type nodeTable struct {
	slots []nodeSlot // a power of two long, at most half full
	n     int
}

type nodeSlot struct {
	used bool
	key  string // the node's name
	node nodeMemo
}

// get returns the node called name, or nil if it was not put. The pointer
// is valid until the next put.
func (t *nodeTable) get(name string) *nodeMemo {
	if t.n == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := nameHash(name) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if !s.used {
			return nil
		}
		if s.key == name {
			return &s.node
		}
	}
}

// put adds the node called name, which is not in t, and returns its
// memory in t, valid until the next put.
func (t *nodeTable) put(name string, node nodeMemo) *nodeMemo {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]nodeSlot, max(16, 2*len(old)))
		t.n = 0
		for i := range old {
			if old[i].used {
				t.insert(old[i].key, old[i].node)
			}
		}
	}
	return t.insert(name, node)
}

func (t *nodeTable) insert(name string, node nodeMemo) *nodeMemo {
	mask := uint64(len(t.slots) - 1)
	i := nameHash(name) & mask
	for t.slots[i].used {
		i = (i + 1) & mask
	}
	t.slots[i] = nodeSlot{used: true, key: name, node: node}
	t.n++
	return &t.slots[i].node
}

// reset empties t.
func (t *nodeTable) reset() {
	*t = nodeTable{}
}

// nameHash hashes every byte of s, 8 at a time.
func nameHash(s string) uint64 {
	const k1, k2 = 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f
	h := uint64(len(s)) * k1
	n := len(s)
	switch {
	case n == 0:
	case n < 4: // the first, middle and last byte are all of them
		h = bits.RotateLeft64((h^(uint64(s[0])|uint64(s[n/2])<<8|uint64(s[n-1])<<16))*k2, 31)
	case n < 8: // the first 4 and the last 4, overlapping
		h = bits.RotateLeft64((h^(uint64(load4(s))|uint64(load4(s[n-4:]))<<32))*k2, 31)
	default:
		for i := 0; i+8 < n; i += 8 {
			h = bits.RotateLeft64((h^load8(s[i:]))*k2, 31) * k1
		}
		h = bits.RotateLeft64((h^load8(s[n-8:]))*k2, 31) // the last 8, overlapping the word before
	}
	h ^= h >> 29
	h *= 0x94d049bb133111eb
	return h ^ h>>32
}

// load4 returns the first 4 bytes of s, which has at least 4, little
// endian.
func load4(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// load8 returns the first 8 bytes of s, which has at least 8, little
// endian.
func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
