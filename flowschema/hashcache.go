package flowschema

import (
	"encoding/binary"
	"math/bits"
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

// packWords stores s, at most 8*hashSlotWords bytes, in w as
// little-endian words, the last one zero-padded, and returns how many
// words it used, (len(s)+7)/8, and the slot of the pair (schema, s): a
// hash of every byte, one multiplication per word.
func packWords(schema int, s string, w *[hashSlotWords]uint64) (nw int, slot uint64) {
	n := len(s)
	nw = (n + 7) / 8
	h := uint64(schema)<<32 ^ uint64(n)
	for i := 0; i < nw-1; i++ {
		x := load8(s, 8*i)
		w[i] = x
		h = (h ^ x) * 0x9e3779b97f4a7c15
	}
	// The last word: at most two loads.
	var x uint64
	switch {
	case n >= 8:
		// The last 8 bytes, shifted so that the wanted ones are the low
		// ones.
		x = load8(s, n-8) >> (8 * (8*nw - n))
	case n >= 4:
		// Two overlapping 4-byte loads; overlapping bytes are equal.
		x = load4(s, 0) | load4(s, n-4)<<(8*(n-4))
	case n > 0:
		// First, middle and last cover 1 to 3 bytes.
		x = uint64(s[0]) | uint64(s[n/2])<<(8*(n/2)) | uint64(s[n-1])<<(8*(n-1))
	default:
		return 0, (h * 0xbf58476d1ce4e5b9 >> 32) % hashCacheSlots
	}
	w[nw-1] = x
	h = (h ^ x) * 0x9e3779b97f4a7c15
	h = (h ^ h>>29) * 0xbf58476d1ce4e5b9
	return nw, (h >> 32) % hashCacheSlots
}

// quickHash hashes s from its length and at most 16 of its bytes (the
// first and last eight, overlapping for short strings, see hashWords),
// with one multiplication (mixWords): cheap, and good enough for tables
// whose every hit is verified.
func quickHash(s string) uint64 {
	a, b := hashWords(s)
	return mixWords(a, b, len(s))
}

// mixWords is quickHash's mixing of the two words and the length: the
// 128-bit product of the keyed words, folded, so that every input bit
// reaches the low bits a table indexes by. (Keys that share a prefix and
// a suffix, as "system:authenticated" and "system:unauthenticated" do,
// differ only in a few bits of a; a plain multiplication would carry
// those only upward, away from the index bits.)
func mixWords(a, b uint64, n int) uint64 {
	hi, lo := bits.Mul64(a^0x9e3779b97f4a7c15, b^uint64(n)^0xbf58476d1ce4e5b9)
	return hi ^ lo
}

// hashWords returns the two words quickHash mixes: the first and last 8
// bytes of s, or 4 for a shorter s, or its first, middle and last byte;
// with the length they determine a string of up to 16 bytes.
func hashWords(s string) (a, b uint64) {
	n := len(s)
	switch {
	case n >= 8:
		a, b = load8(s, 0), load8(s, n-8)
	case n >= 4:
		a, b = load4(s, 0), load4(s, n-4)
	case n > 0:
		a = uint64(s[0])<<16 | uint64(s[n/2])<<8 | uint64(s[n-1])
	}
	return a, b
}

// slotOf picks the slot of a (FlowSchema, distinguisher) pair.
func slotOf(schema int, dist string) uint64 {
	var w [hashSlotWords]uint64
	_, slot := packWords(schema, dist, &w)
	return slot
}

// flowHash returns shufflesharding.FlowHash(fsName, dist) for the
// FlowSchema with the given index.
func (c *flowHashCache) flowHash(schema int, fsName, dist string) uint64 {
	if len(dist) > maxCachedDistinguisher || schema > maxCachedSchema {
		return shufflesharding.FlowHash(fsName, dist)
	}
	var buf [hashSlotWords]uint64
	nw, si := packWords(schema, dist, &buf)
	w := buf[:nw]
	meta := uint32(schema)<<8 | uint32(len(dist)+1)
	slot := &c.slots[si]
	seq := slot.seq.Load()
	if seq&1 == 0 && slot.meta.Load() == meta {
		same := true
		for i, x := range w {
			if slot.words[i].Load() != x {
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
		for i, x := range w {
			slot.words[i].Store(x)
		}
		slot.hash.Store(h)
		slot.seq.Store(seq + 2)
	}
	return h
}
