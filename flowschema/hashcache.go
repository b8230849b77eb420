package flowschema

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/fairslice/fairslice/shufflesharding"
)

// flowHashCache remembers recent flow hashes, so that Classify does not
// run SHA-256 for every request of a flow it has seen. It is direct
// mapped: a (FlowSchema, distinguisher) pair has one slot, and a new pair
// evicts the old one. Slots are seqlocks whose every field is atomic, so
// readers and writers on any number of goroutines never block, never
// allocate, and never see a torn entry: a reader accepts a slot only if
// its sequence number was even and unchanged across the read, and the
// stored distinguisher equals its own byte for byte. A miss computes the
// hash with shufflesharding.FlowHash, so a cached hash is always the hash.
type flowHashCache struct {
	slots [hashCacheSlots]hashSlot
}

const (
	hashCacheSlots = 512
	// maxCachedDistinguisher is the longest distinguisher cached; longer
	// ones are hashed every time.
	maxCachedDistinguisher = 8 * hashSlotWords
	hashSlotWords          = 6
)

type hashSlot struct {
	seq   atomic.Uint32
	meta  atomic.Uint64 // schema<<8 | len(distinguisher)+1; 0 when empty
	hash  atomic.Uint64
	words [hashSlotWords]atomic.Uint64
}

func newFlowHashCache() *flowHashCache { return &flowHashCache{} }

// word returns bytes 8i..8i+7 of s, little-endian, zero-padded.
func word(s string, i int) uint64 {
	if 8*i+8 <= len(s) {
		// A read-only view of the string's bytes; nothing is written.
		return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[8*i:]), 8))
	}
	var w uint64
	for j := len(s) - 1; j >= 8*i; j-- {
		w = w<<8 | uint64(s[j])
	}
	return w
}

// slotOf picks the slot of a (FlowSchema, distinguisher) pair from the
// length and the first and last words of the distinguisher: cheap, and
// the slot is verified byte for byte anyway.
func slotOf(schema int, dist string) uint64 {
	h := uint64(len(dist)) ^ uint64(schema)<<32
	if len(dist) > 0 {
		h ^= word(dist, 0) * 0x9e3779b97f4a7c15
		h ^= word(dist, (len(dist)-1)/8) * 0xc2b2ae3d27d4eb4f
	}
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return (h ^ h>>32) % hashCacheSlots
}

// flowHash returns shufflesharding.FlowHash(fsName, dist) for the
// FlowSchema with the given index.
func (c *flowHashCache) flowHash(schema int, fsName, dist string) uint64 {
	if len(dist) > maxCachedDistinguisher {
		return shufflesharding.FlowHash(fsName, dist)
	}
	meta := uint64(schema)<<8 | uint64(len(dist)+1)
	slot := &c.slots[slotOf(schema, dist)]
	seq := slot.seq.Load()
	if seq&1 == 0 && slot.meta.Load() == meta {
		same := true
		for i := 0; i*8 < len(dist); i++ {
			if slot.words[i].Load() != word(dist, i) {
				same = false
				break
			}
		}
		if same {
			h := slot.hash.Load()
			if slot.seq.Load() == seq {
				return h
			}
		}
	}
	h := shufflesharding.FlowHash(fsName, dist)
	if seq&1 == 0 && slot.seq.CompareAndSwap(seq, seq+1) {
		slot.meta.Store(meta)
		for i := 0; i*8 < len(dist); i++ {
			slot.words[i].Store(word(dist, i))
		}
		slot.hash.Store(h)
		slot.seq.Store(seq + 2)
	}
	return h
}
