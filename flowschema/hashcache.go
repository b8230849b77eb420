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

// hashSlot is 64 bytes, one cache line.
type hashSlot struct {
	seq   atomic.Uint32
	meta  atomic.Uint32 // schema<<8 | len(distinguisher)+1; 0 when empty
	hash  atomic.Uint64
	words [hashSlotWords]atomic.Uint64
}

// maxCachedSchema bounds the FlowSchema indexes whose flows are cached
// (meta keeps 24 bits of it).
const maxCachedSchema = 1<<24 - 1

func newFlowHashCache() *flowHashCache { return &flowHashCache{} }

// load8 and load4 read 8 or 4 bytes of s at i, little-endian, through a
// read-only view of the string's bytes; the caller checks the bounds.
func load8(s string, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
}

func load4(s string, i int) uint64 {
	return uint64(binary.LittleEndian.Uint32(unsafe.Slice(unsafe.StringData(s[i:]), 4)))
}

// word returns bytes 8i..8i+7 of s, little-endian, zero-padded.
func word(s string, i int) uint64 {
	if 8*i+8 <= len(s) {
		return load8(s, 8*i)
	}
	return tailWord(s, i)
}

// tailWord is word for the last, partial word; kept out of line so that
// word inlines.
//
//go:noinline
func tailWord(s string, i int) uint64 {
	switch {
	case len(s) >= 8:
		// The tail: the last 8 bytes, shifted so that the wanted ones are
		// the low ones.
		return load8(s, len(s)-8) >> (8 * (8*i + 8 - len(s)))
	}
	var w uint64
	for j := len(s) - 1; j >= 8*i; j-- {
		w = w<<8 | uint64(s[j])
	}
	return w
}

// quickHash hashes s from its length and at most 16 of its bytes (the
// first and last eight, overlapping for short strings), with one
// multiplication: cheap, and good enough for tables whose every hit is
// verified.
func quickHash(s string) uint64 {
	n := len(s)
	var a, b uint64
	switch {
	case n >= 8:
		a, b = load8(s, 0), load8(s, n-8)
	case n >= 4:
		a, b = load4(s, 0), load4(s, n-4)
	case n > 0:
		a, b = uint64(s[0])<<16|uint64(s[n/2])<<8|uint64(s[n-1]), 0
	}
	h := (a ^ (b<<29 | b>>35) ^ uint64(n)<<56) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// slotOf picks the slot of a (FlowSchema, distinguisher) pair from the
// length and the first and last words of the distinguisher: cheap, and
// the slot is verified byte for byte anyway.
func slotOf(schema int, dist string) uint64 {
	h := (quickHash(dist) ^ uint64(schema)) * 0xbf58476d1ce4e5b9
	return (h >> 32) % hashCacheSlots
}

// flowHash returns shufflesharding.FlowHash(fsName, dist) for the
// FlowSchema with the given index.
func (c *flowHashCache) flowHash(schema int, fsName, dist string) uint64 {
	if len(dist) > maxCachedDistinguisher || schema > maxCachedSchema {
		return shufflesharding.FlowHash(fsName, dist)
	}
	meta := uint32(schema)<<8 | uint32(len(dist)+1)
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
