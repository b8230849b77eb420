package shufflesharding

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// referencePickerShard is the naive oracle: score every zone and member from
// scratch, sort everything, interleave whole zones and cut the prefix.
func referencePickerShard(members []Member, key uint64, size int) []string {
	kh := pickerKeyMix(key)
	type scored struct {
		name  string
		score uint64
	}
	byScore := func(x, y scored) int {
		if x.score != y.score {
			return cmp.Compare(y.score, x.score)
		}
		return strings.Compare(x.name, y.name)
	}
	perZone := map[string][]scored{}
	var zones []scored
	for _, m := range members {
		if _, ok := perZone[m.Zone]; !ok {
			zones = append(zones, scored{m.Zone, pickerScore(kh, pickerNameState(pickerZoneDomain, m.Zone))})
		}
		perZone[m.Zone] = append(perZone[m.Zone], scored{m.Name, pickerScore(kh, pickerNameState(pickerMemberDomain, m.Name))})
	}
	slices.SortFunc(zones, byScore)
	for _, z := range zones {
		slices.SortFunc(perZone[z.name], byScore)
	}
	var all []string
	for r := 0; len(all) < len(members); r++ {
		for _, z := range zones {
			if ms := perZone[z.name]; r < len(ms) {
				all = append(all, ms[r].name)
			}
		}
	}
	return all[:min(max(size, 0), len(all))]
}

// genPickerMembers draws 1..maxN members with distinct names, zoned (over up to
// five zones) or not.
func genPickerMembers(t *rapid.T, maxN int) []Member {
	names := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z]{1,3}`), 1, maxN, rapid.ID[string]).Draw(t, "names")
	zoned := rapid.Bool().Draw(t, "zoned")
	members := make([]Member, len(names))
	for i, n := range names {
		members[i].Name = n
		if zoned {
			members[i].Zone = rapid.SampledFrom([]string{"za", "zb", "zc", "zd", "ze"}).Draw(t, "zone")
		}
	}
	return members
}

// pickerFataler is what mustPicker needs of *testing.T and *rapid.T.
type pickerFataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func mustPicker(t pickerFataler, members []Member) *Picker {
	t.Helper()
	p, err := NewPicker(members)
	if err != nil {
		t.Fatalf("NewPicker(%v) error %v", members, err)
	}
	return p
}

func pickerShardNames(p *Picker, key uint64, size int) []string {
	idx := p.ShardInto(key, size, nil)
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = p.Member(j).Name
	}
	return out
}

// pickerSetDiff returns the elements of a not in b.
func pickerSetDiff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func TestPickerMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genPickerMembers(t, 40)
		p := mustPicker(t, members)
		key := rapid.Uint64().Draw(t, "key")
		size := rapid.IntRange(-2, len(members)+2).Draw(t, "size")
		got := pickerShardNames(p, key, size)
		want := referencePickerShard(members, key, size)
		if !slices.Equal(got, want) {
			t.Fatalf("ShardInto(%#x, %d) = %v, want %v", key, size, got, want)
		}
	})
}

// TestPickerLargeShardsMatchReference covers the sort path used for blocks
// larger than pickerStreamMax.
func TestPickerLargeShardsMatchReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(pickerStreamMax, 3*pickerStreamMax).Draw(t, "n")
		zones := rapid.IntRange(0, 3).Draw(t, "zones")
		members := make([]Member, n)
		for i := range members {
			members[i].Name = fmt.Sprintf("m%d", i)
			if zones > 0 {
				members[i].Zone = fmt.Sprintf("z%d", rapid.IntRange(0, zones-1).Draw(t, "zone"))
			}
		}
		p := mustPicker(t, members)
		key := rapid.Uint64().Draw(t, "key")
		size := rapid.IntRange(0, n).Draw(t, "size")
		got := pickerShardNames(p, key, size)
		want := referencePickerShard(members, key, size)
		if !slices.Equal(got, want) {
			t.Fatalf("ShardInto(%#x, %d) = %v, want %v", key, size, got, want)
		}
	})
}

func TestPickerDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genPickerMembers(t, 30)
		shuffled := rapid.Permutation(members).Draw(t, "shuffled")
		p, q := mustPicker(t, members), mustPicker(t, shuffled)
		key := rapid.Uint64().Draw(t, "key")
		size := rapid.IntRange(0, len(members)).Draw(t, "size")
		first := pickerShardNames(p, key, size)
		if again := pickerShardNames(p, key, size); !slices.Equal(first, again) {
			t.Fatalf("ShardInto(%#x, %d) = %v then %v", key, size, first, again)
		}
		if other := pickerShardNames(q, key, size); !slices.Equal(first, other) {
			t.Fatalf("ShardInto(%#x, %d) = %v for %v, want %v as for %v", key, size, other, shuffled, first, members)
		}
	})
}

// TestPickerPinnedShards pins outputs of this implementation so that a
// change of hash or order is noticed: callers persist or compare shards, so
// they are part of the contract across releases.
func TestPickerPinnedShards(t *testing.T) {
	var plain, zoned []Member
	for i := range 8 {
		plain = append(plain, Member{Name: fmt.Sprintf("q%d", i)})
		zoned = append(zoned, Member{Name: fmt.Sprintf("q%d", i), Zone: fmt.Sprintf("z%d", i%3)})
	}
	tests := []struct {
		members []Member
		key     uint64
		size    int
		want    string
	}{
		{plain, 0, 4, "[q1 q2 q0 q4]"},
		{plain, 1, 4, "[q1 q0 q3 q6]"},
		{plain, 0xdeadbeef, 8, "[q1 q4 q7 q5 q6 q3 q2 q0]"},
		{zoned, 0, 4, "[q1 q0 q2 q4]"},
		{zoned, 1, 4, "[q1 q0 q2 q4]"},
		{zoned, 0xdeadbeef, 8, "[q5 q1 q6 q2 q4 q3 q7 q0]"},
	}
	for _, tt := range tests {
		p := mustPicker(t, tt.members)
		if got := fmt.Sprint(pickerShardNames(p, tt.key, tt.size)); got != tt.want {
			t.Errorf("ShardInto(%#x, %d) = %s, want %s", tt.key, tt.size, got, tt.want)
		}
	}
}

// checkPickerChange asserts the stability bound between two shards: at most
// maxOut members left and at most maxIn entered, and every entering
// member is one of allowedIn (nil means any).
func checkPickerChange(t *rapid.T, what string, oldS, newS []string, maxOut, maxIn int, allowedIn []string) {
	out, in := pickerSetDiff(oldS, newS), pickerSetDiff(newS, oldS)
	if len(out) > maxOut || len(in) > maxIn {
		t.Fatalf("%s: shard %v -> %v removes %v and adds %v, want at most %d and %d", what, oldS, newS, out, in, maxOut, maxIn)
	}
	if allowedIn != nil {
		for _, x := range in {
			if !slices.Contains(allowedIn, x) {
				t.Fatalf("%s: shard %v -> %v adds %q, want only %v", what, oldS, newS, x, allowedIn)
			}
		}
	}
}

func TestPickerAddOneMemberMovesAtMostOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genPickerMembers(t, 25)
		added := Member{Name: "new"} // generated names have at most 3 letters
		if members[0].Zone != "" {
			// An existing zone or, as the first of its zone, a new one.
			added.Zone = rapid.SampledFrom([]string{"za", "zb", "zc", "zd", "ze", "zf"}).Draw(t, "addedZone")
		}
		before := mustPicker(t, members)
		after := mustPicker(t, append(slices.Clone(members), added))
		for range 8 {
			key := rapid.Uint64().Draw(t, "key")
			for size := 0; size <= len(members)+1; size++ {
				what := fmt.Sprintf("add %v, ShardInto(%#x, %d)", added, key, size)
				checkPickerChange(t, what, pickerShardNames(before, key, size), pickerShardNames(after, key, size), 1, 1, []string{added.Name})
			}
		}
	})
}

func TestPickerRemoveOneMemberMovesAtMostOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genPickerMembers(t, 25)
		if len(members) < 2 {
			t.Skip("need two members")
		}
		i := rapid.IntRange(0, len(members)-1).Draw(t, "removed")
		removed := members[i]
		rest := slices.Delete(slices.Clone(members), i, i+1)
		before, after := mustPicker(t, members), mustPicker(t, rest)
		for range 8 {
			key := rapid.Uint64().Draw(t, "key")
			for size := 0; size <= len(members); size++ {
				what := fmt.Sprintf("remove %v, ShardInto(%#x, %d)", removed, key, size)
				oldS, newS := pickerShardNames(before, key, size), pickerShardNames(after, key, size)
				checkPickerChange(t, what, oldS, newS, 1, 1, nil)
				if out := pickerSetDiff(oldS, newS); len(out) == 1 && out[0] != removed.Name {
					t.Fatalf("%s: shard %v -> %v removes %v, want only %q", what, oldS, newS, out, removed.Name)
				}
			}
		}
	})
}

// TestPickerBatchChangeMovesAtMostBatch checks the documented boundary of
// the stability guarantee: changing m members at once moves at most m each
// way.
func TestPickerBatchChangeMovesAtMostBatch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genPickerMembers(t, 25)
		zoned := members[0].Zone != ""
		next := slices.Clone(members)
		m := 0
		for range rapid.IntRange(0, 3).Draw(t, "removals") {
			if len(next) > 1 {
				i := rapid.IntRange(0, len(next)-1).Draw(t, "removed")
				next = slices.Delete(next, i, i+1)
				m++
			}
		}
		for j := range rapid.IntRange(0, 3).Draw(t, "additions") {
			a := Member{Name: fmt.Sprintf("new%d", j)}
			if zoned {
				a.Zone = rapid.SampledFrom([]string{"za", "zf", "zg"}).Draw(t, "addedZone")
			}
			next = append(next, a)
			m++
		}
		before, after := mustPicker(t, members), mustPicker(t, next)
		key := rapid.Uint64().Draw(t, "key")
		for size := 0; size <= len(members)+3; size++ {
			what := fmt.Sprintf("change %d members, ShardInto(%#x, %d)", m, key, size)
			checkPickerChange(t, what, pickerShardNames(before, key, size), pickerShardNames(after, key, size), m, m, nil)
		}
	})
}

// TestPickerNewTwoMemberZoneCanMoveTwo shows the batch bound is tight and
// the per-member guarantee cannot extend to batches: 3+3 over two zones
// becomes 2+2+2 when a third zone arrives with two members.
func TestPickerNewTwoMemberZoneCanMoveTwo(t *testing.T) {
	var members []Member
	for i := range 10 {
		members = append(members, Member{Name: fmt.Sprintf("a%d", i), Zone: "A"}, Member{Name: fmt.Sprintf("b%d", i), Zone: "B"})
	}
	grown := append(slices.Clone(members), Member{Name: "c0", Zone: "C"}, Member{Name: "c1", Zone: "C"})
	before, after := mustPicker(t, members), mustPicker(t, grown)
	for key := range uint64(200) {
		oldS, newS := pickerShardNames(before, key, 6), pickerShardNames(after, key, 6)
		out, in := pickerSetDiff(oldS, newS), pickerSetDiff(newS, oldS)
		if len(out) != 2 || len(in) != 2 {
			t.Fatalf("ShardInto(%d, 6) = %v -> %v removes %v and adds %v, want exactly 2 and 2 (3+3 -> 2+2+2)", key, oldS, newS, out, in)
		}
	}
	// One member at a time, the same end state is reached in steps of one.
	mid := mustPicker(t, grown[:len(grown)-1])
	for key := range uint64(200) {
		a, b, c := pickerShardNames(before, key, 6), pickerShardNames(mid, key, 6), pickerShardNames(after, key, 6)
		for _, step := range [][2][]string{{a, b}, {b, c}} {
			if out, in := pickerSetDiff(step[0], step[1]), pickerSetDiff(step[1], step[0]); len(out) > 1 || len(in) > 1 {
				t.Fatalf("key %d: step %v -> %v removes %v and adds %v, want at most one each", key, step[0], step[1], out, in)
			}
		}
	}
}

func TestPickerNestedPrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genPickerMembers(t, 30)
		p := mustPicker(t, members)
		key := rapid.Uint64().Draw(t, "key")
		full := pickerShardNames(p, key, len(members))
		for k := 0; k <= len(members); k++ {
			if got := pickerShardNames(p, key, k); !slices.Equal(got, full[:k]) {
				t.Fatalf("ShardInto(%#x, %d) = %v, want prefix %v of size %d shard %v", key, k, got, full[:k], len(members), full)
			}
		}
	})
}

// TestPickerShardShape checks size, distinctness and the zone spread: two
// zones' counts differ by at most one unless the smaller is used up.
func TestPickerShardShape(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genPickerMembers(t, 40)
		p := mustPicker(t, members)
		key := rapid.Uint64().Draw(t, "key")
		size := rapid.IntRange(-1, len(members)+1).Draw(t, "size")
		idx := p.ShardInto(key, size, nil)
		if want := min(max(size, 0), len(members)); len(idx) != want {
			t.Fatalf("len(ShardInto(%#x, %d)) = %d, want %d", key, size, len(idx), want)
		}
		zoneSize, taken := map[string]int{}, map[string]int{}
		for _, m := range members {
			zoneSize[m.Zone]++
		}
		seen := map[int]bool{}
		for _, i := range idx {
			if i < 0 || i >= len(members) || seen[i] {
				t.Fatalf("ShardInto(%#x, %d) = %v, want distinct indices in [0, %d)", key, size, idx, len(members))
			}
			seen[i] = true
			taken[members[i].Zone]++
		}
		for z1 := range zoneSize {
			for z2 := range zoneSize {
				if taken[z2] < zoneSize[z2] && taken[z1] > taken[z2]+1 {
					t.Fatalf("ShardInto(%#x, %d) takes %d from zone %q and %d of %d from zone %q, want a difference of at most 1", key, size, taken[z1], z1, taken[z2], zoneSize[z2], z2)
				}
			}
		}
	})
}

func TestPickerShardIntoReusesDst(t *testing.T) {
	members := make([]Member, 64)
	for i := range members {
		members[i] = Member{Name: fmt.Sprintf("m%d", i), Zone: fmt.Sprintf("z%d", i%3)}
	}
	p := mustPicker(t, members)
	dst := make([]int, 1, 8)
	dst[0] = -1
	got := p.ShardInto(7, 8, dst)
	if &got[0] != &dst[0] || len(got) != 8 {
		t.Fatalf("ShardInto(7, 8, dst) = %v, want it written into dst[:8]", got)
	}
	// Shards of up to pickerSmallShard members use stack scratch, so this
	// holds even under the race detector, which makes sync.Pool drop
	// buffers; BenchmarkPickerShardInto covers larger shards.
	allocs := testing.AllocsPerRun(100, func() { dst = p.ShardInto(7, 8, dst) })
	if allocs != 0 {
		t.Errorf("ShardInto(7, 8, dst) allocates %v times, want 0", allocs)
	}
}

func TestPickerShardAndAccessors(t *testing.T) {
	members := []Member{{"a", "x"}, {"b", "y"}, {"c", "x"}}
	p := mustPicker(t, members)
	if p.Len() != 3 || p.NumZones() != 2 {
		t.Fatalf("Len(), NumZones() = %d, %d, want 3, 2", p.Len(), p.NumZones())
	}
	got := p.Members()
	got[0].Name = "changed"
	if p.Member(0).Name != "a" {
		t.Errorf("Members() shares storage with the Picker")
	}
	for key := range uint64(20) {
		idx := p.ShardInto(key, 2, nil)
		shard := p.Shard(key, 2)
		for i, j := range idx {
			if shard[i] != members[j] {
				t.Fatalf("Shard(%d, 2) = %v, want members at %v", key, shard, idx)
			}
		}
	}
	unzoned := mustPicker(t, []Member{{Name: "a"}, {Name: "b"}})
	if unzoned.NumZones() != 1 {
		t.Errorf("NumZones() = %d without zones, want 1", unzoned.NumZones())
	}
}

func TestNewPickerErrors(t *testing.T) {
	tests := []struct {
		members []Member
		want    []string
	}{
		{nil, []string{"shufflesharding: NewPicker: no members"}},
		{[]Member{{Name: ""}}, []string{"members[0].Name is empty"}},
		{[]Member{{Name: "a"}, {Name: "b"}, {Name: "a"}}, []string{`members[2].Name "a" duplicates members[0].Name`}},
		{[]Member{{"a", "z"}, {"b", ""}, {"c", ""}}, []string{`these have an empty Zone: members[1] "b", members[2] "c"`}},
		{
			[]Member{{"a", "z"}, {"", "z"}, {"a", ""}, {"a", "y"}},
			[]string{"members[1].Name is empty", `members[2].Name "a" duplicates members[0].Name`, `members[3].Name "a" duplicates`, `members[2] "a"`},
		},
	}
	for _, tt := range tests {
		p, err := NewPicker(tt.members)
		if err == nil {
			t.Errorf("NewPicker(%v) = %v, nil, want an error", tt.members, p)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("NewPicker(%v) error = %q, want it to contain %q", tt.members, err, w)
			}
		}
		if !strings.HasPrefix(err.Error(), "shufflesharding: ") {
			t.Errorf("NewPicker(%v) error = %q, want the package prefix", tt.members, err)
		}
	}
}

// TestPickerAddChangesAboutKOverN checks the rate of change on adding a
// member: a shard of size k among n changes with probability k/(n+1).
func TestPickerAddChangesAboutKOverN(t *testing.T) {
	const n, k, keys = 63, 8, 20000
	seed := uint64(20261130)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	var members []Member
	for i := range n {
		members = append(members, Member{Name: fmt.Sprintf("queue-%d", i)})
	}
	before := mustPicker(t, members)
	after := mustPicker(t, append(members, Member{Name: "queue-new"}))
	changed := 0
	for range keys {
		key := rng.Uint64()
		if !slices.Equal(before.ShardInto(key, k, nil), after.ShardInto(key, k, nil)[:k]) {
			changed++
		}
	}
	// Each shard either is unchanged or swaps in the newcomer, which is in
	// the top k with probability k/(n+1) = 0.125; 5 sigma is about 0.012.
	got, want := float64(changed)/keys, float64(k)/(n+1)
	if got < want-0.012 || got > want+0.012 {
		t.Errorf("fraction of changed shards = %.4f, want %.4f ± 0.012", got, want)
	}
}

// FuzzPicker builds pickers from "name/zone,name/zone" specs: NewPicker
// must either report a prefixed error or give shards equal to the
// reference.
func FuzzPicker(f *testing.F) {
	f.Add("a/x,b/y,c/x,d/z", uint64(1), 3)
	f.Add("a,b,c", uint64(0), 5)
	f.Add("a/x,,a/y,b", uint64(7), -1)
	f.Fuzz(func(t *testing.T, spec string, key uint64, size int) {
		var members []Member
		for part := range strings.SplitSeq(spec, ",") {
			name, zone, _ := strings.Cut(part, "/")
			members = append(members, Member{Name: name, Zone: zone})
		}
		if len(members) > 200 {
			t.Skip("too many members for the reference")
		}
		p, err := NewPicker(members)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "shufflesharding: NewPicker: ") {
				t.Fatalf("NewPicker(%q) error = %q, want the package prefix", spec, err)
			}
			return
		}
		got, want := pickerShardNames(p, key, size), referencePickerShard(members, key, size)
		if !slices.Equal(got, want) {
			t.Fatalf("NewPicker(%q).ShardInto(%#x, %d) = %q, want %q", spec, key, size, got, want)
		}
	})
}

// TestPickerConcurrentUse runs small (stack scratch) and large (pooled
// scratch) picks from several goroutines; run it with -race.
func TestPickerConcurrentUse(t *testing.T) {
	members := make([]Member, 300)
	for i := range members {
		members[i] = Member{Name: fmt.Sprintf("m%d", i), Zone: fmt.Sprintf("z%d", i%4)}
	}
	p := mustPicker(t, members)
	sizes := []int{5, 100}
	want := map[[2]int][]int{}
	for key := range 50 {
		for _, size := range sizes {
			want[[2]int{key, size}] = p.ShardInto(uint64(key), size, nil)
		}
	}
	errs := make(chan string, 4)
	for g := range 4 {
		go func() {
			var dst []int
			msg := ""
			for key := range 50 {
				for _, size := range sizes {
					dst = p.ShardInto(uint64(key), size, dst)
					if w := want[[2]int{key, size}]; msg == "" && !slices.Equal(dst, w) {
						msg = fmt.Sprintf("goroutine %d: ShardInto(%d, %d) = %v, want %v", g, key, size, dst, w)
					}
				}
			}
			errs <- msg
		}()
	}
	for range 4 {
		if msg := <-errs; msg != "" {
			t.Error(msg)
		}
	}
}
