// Command shufflegolden writes the golden vectors that pin fairslice's
// shuffle-sharding Dealer to upstream Kubernetes behaviour.
//
// It runs the dealer from k8s.io/apiserver/pkg/util/shufflesharding (the
// version required by this module's go.mod) over a fixed list of deck and
// hand sizes, a fixed list of hash values and a seeded pseudo-random sample,
// records NewDealer's accept/reject decision and exact error text for
// boundary sizes, and records flow-hash vectors. The output is deterministic:
// running it twice produces byte-identical files.
//
// Usage, from the kube/verify/ directory:
//
//	go run ./cmd/shufflegolden                  # writes ../../shufflesharding/testdata/upstream_hands.json
//	go run ./cmd/shufflegolden -o /tmp/x.json   # writes elsewhere
//
// The file is read by shufflesharding/golden_test.go in the core module.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime/debug"

	upstream "k8s.io/apiserver/pkg/util/shufflesharding"
)

// upstreamModule names the module whose behaviour the file records.
const upstreamModule = "k8s.io/apiserver"

// randomSeed seeds the pseudo-random part of the hand vectors. Changing it
// changes the file; there is no reason to.
const randomSeed = 20260930

// randomCases is the number of seeded pseudo-random hand vectors.
const randomCases = 200

// goldenFile is the schema of upstream_hands.json. Hash values are written
// as 0x-prefixed, 16-digit hexadecimal strings so the file stays exact in
// any JSON reader.
type goldenFile struct {
	Comment     string         `json:"comment"`
	Upstream    string         `json:"upstream"`
	MaxHashBits int            `json:"maxHashBits"`
	Hands       []handVector   `json:"hands"`
	NewDealer   []dealerVector `json:"newDealer"`
	FlowHashes  []flowVector   `json:"flowHashes"`
}

type handVector struct {
	Deck  int    `json:"deck"`
	Hand  int    `json:"hand"`
	Hash  string `json:"hash"`
	Cards []int  `json:"cards"`
}

type dealerVector struct {
	Deck int  `json:"deck"`
	Hand int  `json:"hand"`
	OK   bool `json:"ok"`
	// Error is upstream's exact error text when OK is false.
	Error string `json:"error,omitempty"`
	// EntropyBits is upstream's RequiredEntropyBits, recorded only where
	// upstream documents it as meaningful: 1 <= hand <= deck <= 1<<26.
	EntropyBits *int `json:"entropyBits,omitempty"`
}

type flowVector struct {
	FlowSchema    string `json:"flowSchema"`
	Distinguisher string `json:"distinguisher"`
	Hash          string `json:"hash"`
	// Source says where the hash came from; see the constants below.
	Source string `json:"source"`
	// Hands maps "deck,hand" to upstream's hand for Hash.
	Hands map[string][]int `json:"hands"`
}

// Sources of flow-hash vectors. Upstream's hashFlowID is unexported and only
// reachable through the full APF controller, so the generator cannot call it.
const (
	// sourceReferenceDoc marks hashFlowID outputs copied from the reference
	// document kubernetes-apf.md, section 1.5.
	sourceReferenceDoc = "reference-doc"
	// sourceSpec marks hashes computed here from upstream's documented
	// algorithm; the generator refuses to run unless that computation
	// reproduces every reference-doc vector.
	sourceSpec = "spec"
)

// fixedConfigs are (deck, hand) pairs dealt for every fixed hash, chosen to
// include the extremes NewDealer accepts.
var fixedConfigs = [][2]int{
	{1, 1}, {2, 1}, {2, 2}, {3, 3}, {10, 3}, {16, 4}, {15, 15}, {16, 15},
	{50, 4}, {64, 6}, {64, 8}, {64, 10}, {128, 6}, {128, 8}, {256, 7},
	{1024, 6}, {10_000_000, 2}, {1 << 26, 1}, {1 << 26, 2},
}

// fixedHashes are dealt for every fixed config.
var fixedHashes = []uint64{
	0, 1, 2, 42,
	0xdeadbeef,
	0x0123456789abcdef,
	0xdeadbeefcafebabe,
	12345678901234567890,
	1<<60 - 1, 1 << 60,
	1 << 63,
	math.MaxUint64,
}

// referenceFlows are the hashFlowID vectors published in the reference doc.
var referenceFlows = []struct {
	fs, dist string
	hash     uint64
}{
	{"global-default", "alice", 17644606172554983095},
	{"global-default", "", 5449774753716172163},
}

// specFlows are extra flows whose hashes are computed from the documented
// algorithm, to cover empty names, separators and non-ASCII bytes.
var specFlows = [][2]string{
	{"", ""},
	{"", "alice"},
	{"alice", ""},
	{"exempt", "system:admin"},
	{"workload-leader-election", "system:kube-controller-manager"},
	{"service-accounts", "kube-system"},
	{"a\x00b", "c"},
	{"a", "\x00bc"},
	{"supercalifragilistic expialidocious", "the sound of it is something quite atrocious"},
	{"ünïcødé", "日本語"},
}

// flowHandConfigs are the configs for which each flow's hand is recorded.
var flowHandConfigs = [][2]int{{128, 6}, {64, 6}, {128, 8}}

// dealerPairs returns the (deck, hand) pairs whose NewDealer outcome is
// recorded: non-positive values, hand around deck, the 1<<26 limit, and, for
// every hand size 1..16, decks on both sides of the 60-bit entropy limit.
func dealerPairs() [][2]int {
	pairs := [][2]int{
		{0, 0}, {0, 1}, {1, 0}, {-1, 1}, {1, -1}, {-1, -1}, {0, -5},
		{math.MinInt, 1}, {1, math.MinInt}, {math.MaxInt, 1}, {math.MaxInt, math.MaxInt},
		{1, 1}, {1, 2}, {2, 3}, {15, 16}, {16, 16}, {16, 17},
		{1<<26 - 1, 1}, {1 << 26, 1}, {1<<26 + 1, 1}, {1<<26 + 1, 2}, {1<<26 + 1, 1<<26 + 2},
		{1 << 26, 2}, {1 << 26, 3}, {10_000_000, 2}, {10_000_000, 3},
		{512, 8}, {1024, 6}, {1024, 7}, {15, 15}, {17, 15}, {128, 8}, {128, 9},
		{64, 10}, {64, 11}, {256, 7}, {256, 8}, {16, 15}, {16, 16},
	}
	for hand := 1; hand <= 16; hand++ {
		maxDeck := largestDeck(hand)
		for _, deck := range []int{hand - 1, hand, hand + 1, maxDeck - 1, maxDeck, maxDeck + 1, maxDeck + 2} {
			pairs = append(pairs, [2]int{deck, hand})
		}
	}
	return pairs
}

// largestDeck returns the largest deck upstream accepts for hand, or hand-1
// when it accepts none.
func largestDeck(hand int) int {
	lo, hi := hand-1, 1<<26 // invariant: lo accepted or hand-1; hi+1 rejected
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if _, err := upstream.NewDealer(mid, hand); err == nil {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// randomConfig draws a (deck, hand) pair upstream accepts: hand uniform in
// 1..15 (retrying until some deck works), deck log-uniform up to the
// largest accepted deck.
func randomConfig(r *rand.Rand) (deck, hand int) {
	for {
		hand = 1 + r.IntN(15)
		maxDeck := largestDeck(hand)
		if maxDeck < hand {
			continue
		}
		lo, hi := math.Log2(float64(hand)), math.Log2(float64(maxDeck))
		deck = int(math.Exp2(lo + r.Float64()*(hi-lo)))
		return max(hand, min(deck, maxDeck)), hand
	}
}

// randomHash mixes uniform 64-bit values with small and 60-bit values.
func randomHash(r *rand.Rand) uint64 {
	switch r.IntN(4) {
	case 0:
		return r.Uint64N(1 << 16)
	case 1:
		return r.Uint64N(1 << 60)
	default:
		return r.Uint64()
	}
}

func hexHash(h uint64) string { return fmt.Sprintf("0x%016x", h) }

// hashFlow is the documented hashFlowID algorithm (see sourceSpec).
func hashFlow(fs, dist string) uint64 {
	h := sha256.New()
	h.Write([]byte(fs))
	h.Write([]byte{0})
	h.Write([]byte(dist))
	return binary.LittleEndian.Uint64(h.Sum(nil)[:8])
}

func deal(deck, hand int, hash uint64) []int {
	d, err := upstream.NewDealer(deck, hand)
	if err != nil {
		panic(fmt.Sprintf("NewDealer(%d, %d): %v", deck, hand, err))
	}
	return d.DealIntoHand(hash, make([]int, 0, hand))
}

func upstreamVersion() string {
	info, ok := debug.ReadBuildInfo()
	if ok {
		for _, m := range info.Deps {
			if m.Path == upstreamModule {
				return m.Version
			}
		}
	}
	return "unknown"
}

func build() (*goldenFile, error) {
	g := &goldenFile{
		Comment: "Generated by `cd kube/verify && go run ./cmd/shufflegolden`; do not edit. " +
			"Hands, NewDealer outcomes and entropy bits come from the upstream dealer. " +
			"Upstream's hashFlowID is unexported, so flowHashes are not produced by upstream code: " +
			"source \"reference-doc\" entries are hashFlowID outputs copied from the reference doc kubernetes-apf.md section 1.5; " +
			"source \"spec\" entries are computed by the generator as SHA-256(flowSchema, 0x00, distinguisher), first 8 bytes little-endian, " +
			"a computation checked against the reference-doc entries. Flow hands come from the upstream dealer.",
		Upstream:    upstreamModule + "/pkg/util/shufflesharding " + upstreamVersion(),
		MaxHashBits: upstream.MaxHashBits,
	}
	for _, c := range fixedConfigs {
		for _, h := range fixedHashes {
			g.Hands = append(g.Hands, handVector{c[0], c[1], hexHash(h), deal(c[0], c[1], h)})
		}
	}
	r := rand.New(rand.NewPCG(randomSeed, randomSeed^0x9e3779b97f4a7c15))
	for range randomCases {
		deck, hand := randomConfig(r)
		h := randomHash(r)
		g.Hands = append(g.Hands, handVector{deck, hand, hexHash(h), deal(deck, hand, h)})
	}

	seen := map[[2]int]bool{}
	for _, p := range dealerPairs() {
		if seen[p] {
			continue
		}
		seen[p] = true
		v := dealerVector{Deck: p[0], Hand: p[1]}
		if _, err := upstream.NewDealer(p[0], p[1]); err != nil {
			v.Error = err.Error()
		} else {
			v.OK = true
		}
		if 1 <= p[1] && p[1] <= p[0] && p[0] <= 1<<26 {
			bits := upstream.RequiredEntropyBits(p[0], p[1])
			v.EntropyBits = &bits
		}
		g.NewDealer = append(g.NewDealer, v)
	}

	flowHands := func(h uint64) map[string][]int {
		m := map[string][]int{}
		for _, c := range flowHandConfigs {
			m[fmt.Sprintf("%d,%d", c[0], c[1])] = deal(c[0], c[1], h)
		}
		return m
	}
	for _, f := range referenceFlows {
		if got := hashFlow(f.fs, f.dist); got != f.hash {
			return nil, fmt.Errorf("hashFlow(%q, %q) = %#x, want reference %#x", f.fs, f.dist, got, f.hash)
		}
		g.FlowHashes = append(g.FlowHashes, flowVector{f.fs, f.dist, hexHash(f.hash), sourceReferenceDoc, flowHands(f.hash)})
	}
	for _, f := range specFlows {
		h := hashFlow(f[0], f[1])
		g.FlowHashes = append(g.FlowHashes, flowVector{f[0], f[1], hexHash(h), sourceSpec, flowHands(h)})
	}
	return g, nil
}

func main() {
	out := flag.String("o", "../../shufflesharding/testdata/upstream_hands.json", "output `file`")
	flag.Parse()
	g, err := build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "shufflegolden:", err)
		os.Exit(1)
	}
	data, err := encode(g)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shufflegolden:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "shufflegolden:", err)
		os.Exit(1)
	}
	fmt.Printf("shufflegolden: wrote %s (%d hands, %d NewDealer cases, %d flow hashes)\n",
		*out, len(g.Hands), len(g.NewDealer), len(g.FlowHashes))
}

// encode writes g as indented JSON with one vector per line, which keeps the
// file short and its diffs readable.
func encode(g *goldenFile) ([]byte, error) {
	var b bytes.Buffer
	field := func(name string, v any, last bool) error {
		data, err := marshal(v)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "  %q: %s", name, data)
		if !last {
			b.WriteString(",")
		}
		b.WriteString("\n")
		return nil
	}
	list := func(name string, n int, elem func(int) any, last bool) error {
		fmt.Fprintf(&b, "  %q: [\n", name)
		for i := range n {
			data, err := marshal(elem(i))
			if err != nil {
				return err
			}
			b.WriteString("    ")
			b.Write(data)
			if i < n-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString("  ]")
		if !last {
			b.WriteString(",")
		}
		b.WriteString("\n")
		return nil
	}
	b.WriteString("{\n")
	for _, err := range []error{
		field("comment", g.Comment, false),
		field("upstream", g.Upstream, false),
		field("maxHashBits", g.MaxHashBits, false),
		list("hands", len(g.Hands), func(i int) any { return g.Hands[i] }, false),
		list("newDealer", len(g.NewDealer), func(i int) any { return g.NewDealer[i] }, false),
		list("flowHashes", len(g.FlowHashes), func(i int) any { return g.FlowHashes[i] }, true),
	} {
		if err != nil {
			return nil, err
		}
	}
	b.WriteString("}\n")
	// Round-trip check: the hand-rolled layout must still be valid JSON.
	var check goldenFile
	if err := json.Unmarshal(b.Bytes(), &check); err != nil {
		return nil, fmt.Errorf("encoded file does not parse: %w", err)
	}
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping and without the trailing
// newline json.Encoder adds.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
