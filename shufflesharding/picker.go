package shufflesharding

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Member is one named member of a [Picker]'s set, such as a queue, a
// replica or an endpoint. Name identifies the member and must be unique and
// non-empty. Zone names its failure domain; either every member of a
// Picker has a zone or none has.
type Member struct {
	Name string
	Zone string
}

// Picker picks shards (subsets of a fixed size) of a set of named members
// for 64-bit keys, so that the shard of a key barely moves when the member
// set changes. It is the tool for callers whose deck changes; [Dealer]
// matches Kubernetes and is the tool when the deck is fixed.
//
// # Why not the Dealer
//
// The Dealer decodes the key in a mixed radix whose digits depend on the
// deck size, so adding or removing one queue changes almost every hand:
// every flow moves at once. The Picker instead scores each (key, member
// name) pair with a 64-bit hash and ranks members by score (rendezvous or
// highest-random-weight hashing). A member's score does not depend on the
// other members, so a membership change only moves the one member that
// came or went. This is the "consistency" of Grafana dskit's ring shuffle
// sharding without a token ring: adding or removing one member changes any
// shard by at most one member in and one member out, and adding a member
// changes a shard of size k among n members with probability about k/(n+1).
// The cost is O(n) hashing per pick instead of the Dealer's O(k²).
//
// # Model
//
// Members without zones: the shard of size k is the k members with the
// highest scores, best first.
//
// Members with zones: for each key the zones are ranked by a score of
// (key, zone name) and the members of each zone by their own score. The
// shard is the first k members of the round-robin interleaving of the
// zones: the best member of each zone in zone order, then the second best
// of each zone, and so on, skipping a zone once all its members are used.
// Consequently:
//
//   - Nesting: the shard of size k is a prefix of the shard of size k' > k
//     for the same key and members.
//   - Spread: within a shard, the member counts of two zones differ by at
//     most one unless the smaller zone is used up (all its members are in
//     the shard). With 3 zones of 30 and size 4 the counts are 2,1,1 (dskit
//     rounds up to 2,2,2); which zone gets the extra member varies by key.
//   - Stability: adding or removing a single member, in an existing zone
//     or as the first or last member of a zone, changes any shard by at most
//     one member added and at most one removed. See the proof below.
//   - Determinism: a shard depends only on the key, the size and the set of
//     (name, zone) pairs, not on the order members were given in, the
//     process or the platform.
//
// The stability bound is per member. Changing m members at once (say a new
// zone arrives with two members, or a zone is renamed, which removes and
// adds all its members) changes a shard by at most m members each way, and
// that is tight: six members over zones A and B (3+3) become 2+2+2 when a
// zone C arrives with two members, dropping two. Adding C's members one by
// one reaches the same shards through steps of at most one change each.
//
// Proof of stability. Call (r, q) the slot of the r-th best member (from
// 0) of the zone ranked q; zone q has one slot per member. The interleaving
// lists the slots in order of r, then q, and the shard fills the first k
// slots. Adding member x to zone z adds exactly one slot: (c, z) where c
// was z's size, or (0, z) when z is new. The relative order of all other
// slots is unchanged, because zone ranks and member ranks are rendezvous
// orders, which only insert the newcomer. If the new slot lies beyond the
// first k, the shard has the same slots; only zone z's filling changed, and
// z's top t members gain at most x and lose at most its former t-th member.
// If the new slot lies within the first k, every earlier slot of z was
// already in the shard, so z now contributes all its members, gaining only
// x, and the old k-th slot, which belongs to another zone, is pushed out.
// Either way at most one member enters (x) and at most one leaves.
// Removal is the same argument read backwards.
//
// # Complexity and concurrency
//
// [NewPicker] takes O(n log n) time for n members and hashes each name
// once. A pick of size k hashes the Z zone names and every member of the
// zones it draws from: O(n + Z) time while at most 16 members come from
// each zone and at most 16 zones take part, O((n + Z)·log k) in general.
// It allocates nothing when dst has room for the shard. A Picker is
// immutable and safe for concurrent use; shards larger than 32 members
// borrow scratch buffers from a pool inside the Picker, so a Picker must
// not be copied. To follow a changing member set, build a new Picker;
// shards of the old and new Picker differ as described above.
//
// Use NewPicker; the zero value is not usable.
type Picker struct {
	members []Member
	names   []string // member names, for tie-breaks

	zoneNames []string
	zoneRecs  []pickerRec // per zone, idx is the zone's own index
	zoneStart []int32     // zone z owns recs[zoneStart[z]:zoneStart[z+1]]
	recs      []pickerRec // members grouped by zone

	// sortedCounts holds the zone sizes ascending and countPrefix their
	// prefix sums (countPrefix[i] = sum of sortedCounts[:i]), for finding
	// the round-robin level in O(log² Z).
	sortedCounts []int
	countPrefix  []int

	scratch sync.Pool // *pickerScratch
}

// pickerHashState is the precomputed per-name hash state.
type pickerHashState struct{ a, b uint64 }

type pickerRec struct {
	pickerHashState
	idx int32 // index into members
}

// pickerRanked is a candidate with its score for one key.
type pickerRanked struct {
	score uint64
	idx   int32
}

// pickerScratch holds the buffers of one pick; each needs room for the
// shard size.
type pickerScratch struct {
	zones  []pickerRanked // ranked participating zones
	sel    []pickerRanked // selected members, one block per ranked zone
	take   []int32        // members taken per ranked zone
	off    []int32        // block offset in sel per ranked zone
	active []int32
}

// Domain separators keep member and zone scores independent even when a
// member and a zone share a name.
const (
	pickerMemberDomain = "fairslice/shufflesharding/picker/member\x00"
	pickerZoneDomain   = "fairslice/shufflesharding/picker/zone\x00"
)

// NewPicker returns a Picker over members. It returns an error, prefixed
// with "shufflesharding:", if members is empty, a name is empty or
// repeated, or some members have a zone and others do not; the error lists
// every problem found. The order of members only defines the indices used
// by [Picker.ShardInto] and [Picker.Member].
func NewPicker(members []Member) (*Picker, error) {
	if err := checkMembers(members); err != nil {
		return nil, err
	}
	p := newPickerIndex(members)
	n := len(members)
	p.scratch.New = func() any { return newPickerScratch(n) }
	return p, nil
}

// checkMembers returns every problem of NewPicker's members, joined.
func checkMembers(members []Member) error {
	var errs []error
	if len(members) == 0 {
		errs = append(errs, errors.New("shufflesharding: NewPicker: no members"))
	}
	if len(members) > 1<<31-1 {
		return fmt.Errorf("shufflesharding: NewPicker: %d members is too many", len(members))
	}
	seen := make(map[string]int, len(members))
	var zoned, unzoned []string
	for i, m := range members {
		if m.Name == "" {
			errs = append(errs, fmt.Errorf("shufflesharding: NewPicker: members[%d].Name is empty", i))
		} else if j, dup := seen[m.Name]; dup {
			errs = append(errs, fmt.Errorf("shufflesharding: NewPicker: members[%d].Name %q duplicates members[%d].Name", i, m.Name, j))
		} else {
			seen[m.Name] = i
		}
		if m.Zone == "" {
			unzoned = append(unzoned, fmt.Sprintf("members[%d] %q", i, m.Name))
		} else {
			zoned = append(zoned, m.Name)
		}
	}
	if len(zoned) > 0 && len(unzoned) > 0 {
		errs = append(errs, fmt.Errorf("shufflesharding: NewPicker: some members have a zone but these have an empty Zone: %s", strings.Join(unzoned, ", ")))
	}
	return errors.Join(errs...)
}

// newPickerIndex returns a Picker over valid members, its zones numbered in
// order of first appearance and its members' records grouped by zone.
func newPickerIndex(members []Member) *Picker {
	p := &Picker{
		members: slices.Clone(members),
		names:   make([]string, len(members)),
	}
	zoneOf := make(map[string]int32)
	zoneIDs := make([]int32, len(members))
	var counts []int32
	for i, m := range members {
		p.names[i] = m.Name
		z, ok := zoneOf[m.Zone]
		if !ok {
			z = int32(len(p.zoneNames))
			zoneOf[m.Zone] = z
			p.zoneNames = append(p.zoneNames, m.Zone)
			p.zoneRecs = append(p.zoneRecs, pickerRec{pickerNameState(pickerZoneDomain, m.Zone), z})
			counts = append(counts, 0)
		}
		zoneIDs[i] = z
		counts[z]++
	}
	p.zoneStart = make([]int32, len(counts)+1)
	for z, c := range counts {
		p.zoneStart[z+1] = p.zoneStart[z] + c
	}
	p.recs = make([]pickerRec, len(members))
	next := slices.Clone(p.zoneStart[:len(counts)])
	for i, m := range members {
		z := zoneIDs[i]
		p.recs[next[z]] = pickerRec{pickerNameState(pickerMemberDomain, m.Name), int32(i)}
		next[z]++
	}
	p.sortedCounts = make([]int, len(counts))
	for z, c := range counts {
		p.sortedCounts[z] = int(c)
	}
	slices.Sort(p.sortedCounts)
	p.countPrefix = pickerPrefixSums(p.sortedCounts)

	return p
}

// newPickerScratch returns scratch space for shards over n members.
func newPickerScratch(n int) *pickerScratch {
	return &pickerScratch{
		zones:  make([]pickerRanked, n),
		sel:    make([]pickerRanked, n),
		take:   make([]int32, n),
		off:    make([]int32, n),
		active: make([]int32, 0, n),
	}
}

// Len returns the number of members.
func (p *Picker) Len() int { return len(p.members) }

// NumZones returns the number of distinct zones; it is 1 when members have
// no zones.
func (p *Picker) NumZones() int { return len(p.zoneNames) }

// Member returns the member at index i of the slice given to [NewPicker].
func (p *Picker) Member(i int) Member { return p.members[i] }

// Members returns a copy of the members in the order given to [NewPicker].
func (p *Picker) Members() []Member { return slices.Clone(p.members) }

// Shard returns the shard of the given size for key as members, best
// first. It allocates the result; see [Picker.ShardInto].
func (p *Picker) Shard(key uint64, size int) []Member {
	idx := p.ShardInto(key, size, nil)
	out := make([]Member, len(idx))
	for i, j := range idx {
		out[i] = p.members[j]
	}
	return out
}

// ShardInto computes the shard of the given size for key and returns it as
// indices into the members given to [NewPicker], in shard order (the
// shard of a smaller size is a prefix). It overwrites dst[:0] and appends,
// allocating only if cap(dst) is smaller than the shard. Size is clamped
// to [0, Len()]: a size of Len() or more returns every member.
//
// Key is any 64-bit value; it need not be well mixed. Callers with string
// keys can hash them with [FlowHash] or any other hash. See the Picker
// type for the time taken.
func (p *Picker) ShardInto(key uint64, size int, dst []int) []int {
	dst = dst[:0]
	s := min(max(size, 0), len(p.members))
	if s == 0 {
		return dst
	}
	if s <= pickerSmallShard {
		// Every scratch buffer needs at most s entries: see shardInto.
		var zones, sel [pickerSmallShard]pickerRanked
		var take, off, active [pickerSmallShard]int32
		return p.shardInto(pickerKeyMix(key), s, dst, pickerScratch{zones[:0], sel[:], take[:], off[:], active[:0]})
	}
	sc := p.scratch.Get().(*pickerScratch)
	defer p.scratch.Put(sc)
	return p.shardInto(pickerKeyMix(key), s, dst, *sc)
}

// pickerSmallShard is the largest shard picked with scratch space on the
// stack; larger shards use the Picker's pool.
const pickerSmallShard = 32

// shardInto appends the shard of size s in [1, n] for the mixed key kh to
// dst. The scratch buffers need room for s entries: at most s zones take
// part, because either every zone gives a member (so there are at most s
// zones) or only the best `extra` < s do.
func (p *Picker) shardInto(kh uint64, s int, dst []int, sc pickerScratch) []int {
	level, extra := pickerLevel(p.sortedCounts, p.countPrefix, s)

	// Rank the participating zones: all of them once every zone gives at
	// least one member, else only the best `extra` zones.
	nz := len(p.zoneRecs)
	m := nz
	if level == 0 {
		m = extra
	}
	zones := sc.zones[:m]
	if nz == 1 {
		zones[0] = pickerRanked{idx: 0}
	} else {
		pickerSelectBest(zones, kh, p.zoneRecs, p.zoneNames)
	}

	// Pick each zone's best members into its block of sel.
	off := int32(0)
	for q, zr := range zones {
		z := zr.idx
		lo, hi := p.zoneStart[z], p.zoneStart[z+1]
		t := min(int32(level), hi-lo)
		if hi-lo > int32(level) && extra > 0 {
			t++
			extra--
		}
		sc.take[q], sc.off[q] = t, off
		pickerSelectBest(sc.sel[off:off+t], kh, p.recs[lo:hi], p.names)
		off += t
	}

	// Interleave the blocks round-robin.
	active := sc.active[:0]
	for q := range zones {
		active = append(active, int32(q))
	}
	for r := int32(0); len(active) > 0; r++ {
		keep := active[:0]
		for _, q := range active {
			dst = append(dst, int(sc.sel[sc.off[q]+r].idx))
			if sc.take[q] > r+1 {
				keep = append(keep, q)
			}
		}
		active = keep
	}
	return dst
}

// pickerStreamMax is the largest block filled by insertion into a sorted
// array; larger blocks use a heap.
const pickerStreamMax = 16

// pickerSelectBest fills out, best first, with the len(out) best of recs
// for kh, breaking score ties by names[idx]. It takes
// O(len(recs)·log len(out)) time and no memory beyond out.
func pickerSelectBest(out []pickerRanked, kh uint64, recs []pickerRec, names []string) {
	k := len(out)
	if k == 0 {
		return
	}
	if k <= pickerStreamMax {
		buf := out[:0]
		for _, r := range recs {
			buf = pickerPush(buf, k, pickerRanked{pickerScore(kh, r.pickerHashState), r.idx}, names)
		}
		return
	}
	// A heap of the best k so far with the worst at the root.
	for i, r := range recs[:k] {
		out[i] = pickerRanked{pickerScore(kh, r.pickerHashState), r.idx}
	}
	for i := k/2 - 1; i >= 0; i-- {
		pickerSiftDown(out, i, names)
	}
	for _, r := range recs[k:] {
		c := pickerRanked{pickerScore(kh, r.pickerHashState), r.idx}
		if pickerBefore(c, out[0], names) {
			out[0] = c
			pickerSiftDown(out, 0, names)
		}
	}
	// Pop the worst to the end repeatedly: best first.
	for end := k - 1; end > 0; end-- {
		out[0], out[end] = out[end], out[0]
		pickerSiftDown(out[:end], 0, names)
	}
}

// pickerSiftDown restores the worst-at-root heap order of h below i.
func pickerSiftDown(h []pickerRanked, i int, names []string) {
	for {
		w := i
		if l := 2*i + 1; l < len(h) && pickerBefore(h[w], h[l], names) {
			w = l
		}
		if r := 2*i + 2; r < len(h) && pickerBefore(h[w], h[r], names) {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// pickerBefore reports whether x ranks before y: higher score first, ties
// broken by name so that the order never depends on input order.
func pickerBefore(x, y pickerRanked, names []string) bool {
	if x.score != y.score {
		return x.score > y.score
	}
	return names[x.idx] < names[y.idx]
}

// pickerPush inserts c into buf, which is sorted best first, keeping at
// most k entries. cap(buf) must be at least k.
func pickerPush(buf []pickerRanked, k int, c pickerRanked, names []string) []pickerRanked {
	n := len(buf)
	if n == k {
		if n == 0 || !pickerBefore(c, buf[n-1], names) {
			return buf
		}
		n--
	} else {
		buf = buf[:n+1]
	}
	i := n
	for i > 0 && pickerBefore(c, buf[i-1], names) {
		buf[i] = buf[i-1]
		i--
	}
	buf[i] = c
	return buf
}

// pickerLevel returns the number of full round-robin rounds and the number
// of members of the last partial round for a shard of size s over zones of
// the given sizes (sorted ascending, with prefix sums): the largest level
// with sum(min(count, level)) <= s, and s minus that sum. The partial round
// has fewer members than there are zones larger than level.
func pickerLevel(sorted, prefix []int, s int) (level, extra int) {
	taken := func(l int) int {
		j := sort.SearchInts(sorted, l+1) // zones with count <= l
		return prefix[j] + l*(len(sorted)-j)
	}
	maxCount := sorted[len(sorted)-1]
	// Largest l in [0, maxCount] with taken(l) <= s.
	l := sort.Search(maxCount+1, func(l int) bool { return taken(l) > s }) - 1
	return l, s - taken(l)
}

func pickerPrefixSums(sorted []int) []int {
	prefix := make([]int, len(sorted)+1)
	for i, c := range sorted {
		prefix[i+1] = prefix[i] + c
	}
	return prefix
}

// pickerNameState derives a name's hash state from SHA-256, once per name,
// so that scores are independent across names whatever their spelling.
func pickerNameState(domain, name string) pickerHashState {
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write([]byte(name))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return pickerHashState{
		a: binary.LittleEndian.Uint64(sum[0:8]),
		b: binary.LittleEndian.Uint64(sum[8:16]) | 1,
	}
}

// pickerKeyMix spreads a caller key, which may be a small integer, over all
// 64 bits.
func pickerKeyMix(key uint64) uint64 {
	return pickerFinalize(key ^ 0x9e3779b97f4a7c15)
}

// pickerScore is the rendezvous score of a name for a mixed key: a 128-bit
// multiply by the name's odd multiplier folded to 64 bits, then finalized.
// The per-name multiplier keeps scores of different names unrelated even
// for keys that differ by a name's xor constant.
func pickerScore(kh uint64, st pickerHashState) uint64 {
	hi, lo := bits.Mul64(kh^st.a, st.b)
	return pickerFinalize(hi ^ lo)
}

// pickerFinalize is the MurmurHash3 64-bit finalizer.
func pickerFinalize(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
