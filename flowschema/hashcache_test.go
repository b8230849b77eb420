package flowschema

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/fairslice/fairslice/shufflesharding"
)

func TestWordPacking(t *testing.T) {
	s := "abcdefghijklmnopqrstuvwxyz0123456789"
	for n := 0; n <= len(s); n++ {
		if n > 8*hashSlotWords {
			break
		}
		var w [hashSlotWords]uint64
		if nw, _ := packWords(0, s[:n], &w); nw != (n+7)/8 {
			t.Errorf("packWords(%q) used %d words, want %d", s[:n], nw, (n+7)/8)
		}
		for i := range w {
			var want uint64
			for j := min(n, 8*i+8) - 1; j >= 8*i; j-- {
				want = want<<8 | uint64(s[j])
			}
			if w[i] != want {
				t.Errorf("packWords(%q)[%d] = %#x, want %#x", s[:n], i, w[i], want)
			}
		}
	}
}

// TestFlowHashCacheConcurrent hammers the cache from several goroutines
// with more flows than slots (so entries are evicted while being read) and
// distinguishers around the cached length limit; every hash must be the
// real one. Run with -race.
func TestFlowHashCacheConcurrent(t *testing.T) {
	c := newFlowHashCache()
	names := make([]string, 3*hashCacheSlots)
	for i := range names {
		names[i] = fmt.Sprintf("user-%d-%s", i, strings.Repeat("x", i%(maxCachedDistinguisher+4)))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 4 {
		wg.Go(func() {
			for k := range 20000 {
				i := (k*7 + g*131) % len(names)
				schema := i % 3
				fs := fmt.Sprint("fs-", schema)
				if got, want := c.flowHash(schema, fs, names[i]), shufflesharding.FlowHash(fs, names[i]); got != want {
					select {
					case errs <- fmt.Sprintf("flowHash(%d, %q) = %#x, want %#x", schema, names[i], got, want):
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestFlowHashCacheHits(t *testing.T) {
	c := newFlowHashCache()
	c.flowHash(1, "global-default", "alice")
	if n := testing.AllocsPerRun(100, func() { c.flowHash(1, "global-default", "alice") }); n != 0 {
		t.Errorf("a cached flow hash allocates %v times", n)
	}
	slot := &c.slots[slotOf(1, "alice")]
	if slot.hash.Load() != shufflesharding.FlowHash("global-default", "alice") || slot.seq.Load()%2 != 0 {
		t.Errorf("slot after a miss: hash %#x seq %d", slot.hash.Load(), slot.seq.Load())
	}
	// Same distinguisher, another FlowSchema: a different entry.
	if got, want := c.flowHash(2, "other", "alice"), shufflesharding.FlowHash("other", "alice"); got != want {
		t.Errorf("flowHash(2, other, alice) = %#x, want %#x", got, want)
	}
}

func TestHashSlotIsOneCacheLine(t *testing.T) {
	if s := unsafe.Sizeof(hashSlot{}); s != 64 {
		t.Errorf("hashSlot is %d bytes, want 64 (one cache line)", s)
	}
}

// TestKeySetHashIsQuickHash guards the hand-inlined copy in keySet.get.
func TestKeySetHashIsQuickHash(t *testing.T) {
	var ks keySet
	ks.m = map[string]int32{}
	keys := []string{"", "a", "ab", "abc", "abcd", "abcdefg", "abcdefgh", "system:authenticated", "team-1", "team-2",
		// Same length, first and last 8 bytes: only the middle differs.
		"system:Xauthenticated", "system:Yauthenticated",
		// 20 bytes differing in byte 9 only, which midWord covers.
		"system:auXhenticated", "system:auYhenticated",
		// Longer than midWordMax: the strings are compared.
		"system:serviceaccount:Xkube-system", "system:serviceaccount:Ykube-system"}
	for i, k := range keys {
		ks.m[k] = int32(i + 1)
	}
	ks.freeze()
	for i, k := range keys {
		if got := ks.get(k); got != int32(i+1) {
			t.Errorf("get(%q) = %d, want %d", k, got, i+1)
		}
	}
	for _, k := range []string{"system:Zauthenticated", "system:auZhenticated", "system:serviceaccount:Zkube-system"} {
		if got := ks.get(k); got != 0 {
			t.Errorf("get(%q) = %d, want 0", k, got)
		}
	}
	if got := ks.get("missing"); got != 0 {
		t.Errorf("get(missing) = %d, want 0", got)
	}
}

// TestQuickHashSpreadsSharedAffixes: keys that differ only in one byte
// between a shared prefix and suffix (as Kubernetes group names do) must
// spread over the low bits a keySet indexes by, not pile into one slot.
func TestQuickHashSpreadsSharedAffixes(t *testing.T) {
	buckets := map[uint64]bool{}
	for c := 'a'; c <= 'z'; c++ {
		buckets[quickHash("system:"+string(c)+"authenticated")&15] = true
	}
	if len(buckets) < 8 {
		t.Errorf("26 keys with a shared prefix and suffix fill %d of 16 buckets, want at least 8", len(buckets))
	}
}
