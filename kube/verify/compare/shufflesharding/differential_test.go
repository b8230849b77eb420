package shuffleshardingcompare

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	fairslice "github.com/fairslice/fairslice/shufflesharding"
	upstream "k8s.io/apiserver/pkg/util/shufflesharding"
)

const (
	// seedEnv overrides the random seed of the differential tests.
	seedEnv = "FAIRSLICE_SEED"
	// casesEnv overrides the number of random deals in TestDifferentialDeal.
	casesEnv = "FAIRSLICE_DIFF_CASES"
	// defaultCases is the number of random deals when casesEnv is unset.
	defaultCases = 1_000_000
	// maxReported bounds the mismatches reported before giving up.
	maxReported = 20
)

// testSeed returns the seed from seedEnv, or a fresh one, and logs it.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedEnv); s != "" {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with %s=%d)", seed, seedEnv, seed)
	return seed
}

func testCases(t *testing.T) int {
	t.Helper()
	s := os.Getenv(casesEnv)
	if s == "" {
		return defaultCases
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", casesEnv, s)
	}
	return n
}

// largestDeck returns the largest deck upstream's NewDealer accepts for
// hand, or hand-1 if it accepts none. Acceptance is monotone in the deck
// size for a fixed hand, so a binary search finds the edge.
func largestDeck(hand int) int {
	lo, hi := hand-1, 1<<26
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

// Deck classes drawn by randomDeck, reported in the coverage log.
const (
	deckLogUniform = iota
	deckSmall
	deckAtLimit
	deckPowerOfTwo
	deckUniform
	numDeckClasses
)

var deckClassNames = [numDeckClasses]string{"log-uniform", "small", "at-limit", "power-of-two±1", "uniform"}

// randomDeck draws a deck size in [hand, maxDeck] from one of several
// distributions, so that tiny decks, huge decks and decks right at the
// entropy limit all occur for every hand size.
func randomDeck(r *rand.Rand, hand, maxDeck int) (deck, class int) {
	span := maxDeck - hand + 1
	switch k := r.IntN(8); {
	case k < 3:
		lo, hi := math.Log2(float64(hand)), math.Log2(float64(maxDeck))
		deck, class = int(math.Exp2(lo+r.Float64()*(hi-lo))), deckLogUniform
	case k == 3:
		deck, class = hand+r.IntN(min(span, 33)), deckSmall
	case k == 4:
		deck, class = maxDeck-r.IntN(min(span, 3)), deckAtLimit
	case k == 5:
		p := bits.Len(uint(hand)) - 1 + r.IntN(bits.Len(uint(maxDeck))-bits.Len(uint(hand))+2)
		deck, class = 1<<p+r.IntN(3)-1, deckPowerOfTwo
	default:
		deck, class = hand+r.IntN(span), deckUniform
	}
	return max(hand, min(deck, maxDeck)), class
}

// randomHash mixes hash shapes: uniform, below 2^60 (the entropy the
// validation assumes), small, near MaxUint64, and near a power of two.
func randomHash(r *rand.Rand) uint64 {
	switch r.IntN(6) {
	case 0:
		return r.Uint64N(1 << 60)
	case 1:
		return r.Uint64N(1 << 16)
	case 2:
		return math.MaxUint64 - r.Uint64N(1<<16)
	case 3:
		return 1<<r.IntN(64) + r.Uint64N(5) - 2
	default:
		return r.Uint64()
	}
}

func TestDifferentialDeal(t *testing.T) {
	seed := testSeed(t)
	n := testCases(t)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	var maxDecks [16]int
	for hand := 1; hand <= 15; hand++ {
		maxDecks[hand] = largestDeck(hand)
	}

	var (
		upHand, ourHand = make([]int, 0, 15), make([]int, 0, 15)
		picked          = make([]int, 0, 15)
		pick            = func(c int) { picked = append(picked, c) }
		perHand         [16]int
		perClass        [16][numDeckClasses]int
		largest         [16]int
		failures        int
	)
	fail := func(i, deck, hand int, hash uint64, format string, args ...any) {
		t.Helper()
		failures++
		if failures <= maxReported {
			t.Errorf("case %d (deck %d, hand %d, hash %#x; %s=%d): %s",
				i, deck, hand, hash, seedEnv, seed, fmt.Sprintf(format, args...))
		}
	}
	for i := range n {
		hand := 1 + r.IntN(15)
		deck, class := randomDeck(r, hand, maxDecks[hand])
		hash := randomHash(r)
		perHand[hand]++
		perClass[hand][class]++
		largest[hand] = max(largest[hand], deck)

		ud, uerr := upstream.NewDealer(deck, hand)
		od, oerr := fairslice.NewDealer(deck, hand)
		if uerr != nil || oerr != nil {
			fail(i, deck, hand, hash, "NewDealer: upstream error %v, fairslice error %v", uerr, oerr)
			continue
		}
		upHand = ud.DealIntoHand(hash, upHand)
		ourHand = od.DealIntoHand(hash, ourHand)
		if !slices.Equal(ourHand, upHand) {
			fail(i, deck, hand, hash, "DealIntoHand = %v, upstream %v", ourHand, upHand)
		}
		picked = picked[:0]
		od.Deal(hash, pick)
		if !slices.Equal(picked, upHand) {
			fail(i, deck, hand, hash, "Deal picked %v, upstream %v", picked, upHand)
		}
		if i%1024 == 0 { // the allocating path, now and then
			if got := od.DealIntoHand(hash, nil); !slices.Equal(got, upHand) {
				fail(i, deck, hand, hash, "DealIntoHand(nil) = %v, upstream %v", got, upHand)
			}
		}
	}
	if failures > maxReported {
		t.Errorf("%d mismatches in total; first %d shown", failures, maxReported)
	}

	// The draw must actually cover what the doc comment promises.
	for hand := 1; hand <= 15; hand++ {
		t.Logf("hand %2d: %7d deals, largest deck %8d (limit %8d), per class %v",
			hand, perHand[hand], largest[hand], maxDecks[hand], perClass[hand])
		if n < defaultCases {
			continue
		}
		for c, k := range perClass[hand] {
			if k == 0 {
				t.Errorf("hand %d: no deals from deck class %s", hand, deckClassNames[c])
			}
		}
		if largest[hand] != maxDecks[hand] {
			t.Errorf("hand %d: largest deck dealt %d, want the limit %d", hand, largest[hand], maxDecks[hand])
		}
	}
	t.Logf("%d deals compared, %d mismatches", n, failures)
}

// boundaryPairs returns the (deck, hand) pairs compared by
// TestDifferentialNewDealer.
func boundaryPairs() [][2]int {
	var pairs [][2]int
	extremes := []int{math.MinInt, -1 << 26, -2, -1, 0, 1<<26 - 1, 1 << 26, 1<<26 + 1, 1<<26 + 2, math.MaxInt}
	for _, a := range extremes {
		for _, b := range extremes {
			pairs = append(pairs, [2]int{a, b})
		}
		for hand := -2; hand <= 17; hand++ {
			pairs = append(pairs, [2]int{a, hand}, [2]int{hand, a})
		}
	}
	for hand := -2; hand <= 17; hand++ {
		decks := []int{-1, 0, hand - 2, hand - 1, hand, hand + 1, hand + 2}
		if hand >= 1 {
			// Around the entropy limit for this hand.
			limit := largestDeck(hand)
			for d := limit - 3; d <= limit+3; d++ {
				decks = append(decks, d)
			}
		}
		for p := range 28 { // around every power of two up to 1<<27
			decks = append(decks, 1<<p-1, 1<<p, 1<<p+1)
		}
		for _, deck := range decks {
			pairs = append(pairs, [2]int{deck, hand})
		}
	}
	// Every small configuration.
	for deck := 1; deck <= 2048; deck++ {
		for hand := 1; hand <= 16; hand++ {
			pairs = append(pairs, [2]int{deck, hand})
		}
	}
	return pairs
}

func TestDifferentialNewDealer(t *testing.T) {
	pairs := boundaryPairs()
	accepted, failures := 0, 0
	for _, p := range pairs {
		deck, hand := p[0], p[1]
		ud, uerr := upstream.NewDealer(deck, hand)
		od, oerr := fairslice.NewDealer(deck, hand)
		bad := true
		switch {
		case uerr == nil && oerr != nil:
			t.Errorf("NewDealer(%d, %d) = %v, want a dealer as upstream", deck, hand, oerr)
		case uerr != nil && oerr == nil:
			t.Errorf("NewDealer(%d, %d) = dealer, want upstream's error %q", deck, hand, uerr)
		case uerr != nil && oerr.Error() != uerr.Error():
			t.Errorf("NewDealer(%d, %d) error = %q, want upstream's %q", deck, hand, oerr, uerr)
		case uerr != nil:
			bad = false
		case od.DeckSize() != deck || od.HandSize() != hand:
			t.Errorf("NewDealer(%d, %d) sizes = (%d, %d)", deck, hand, od.DeckSize(), od.HandSize())
		default:
			accepted++
			// One deal per accepted pair, at a hash whose digits are all large.
			got, want := od.DealIntoHand(math.MaxUint64, nil), ud.DealIntoHand(math.MaxUint64, nil)
			if bad = !slices.Equal(got, want); bad {
				t.Errorf("Dealer(%d, %d).DealIntoHand(MaxUint64) = %v, upstream %v", deck, hand, got, want)
			}
		}
		if bad {
			failures++
			if failures >= maxReported {
				t.Fatalf("giving up after %d failing pairs", failures)
			}
		}
	}
	if accepted == 0 || accepted == len(pairs) {
		t.Fatalf("%d of %d boundary pairs accepted; the list no longer straddles the limits", accepted, len(pairs))
	}
	t.Logf("%d boundary pairs compared, %d accepted", len(pairs), accepted)
}

func TestDifferentialRequiredEntropyBits(t *testing.T) {
	// Upstream documents the result only for 1 <= hand <= deck <= 1<<26.
	check := func(deck, hand int) {
		if got, want := fairslice.RequiredEntropyBits(deck, hand), upstream.RequiredEntropyBits(deck, hand); got != want {
			t.Fatalf("RequiredEntropyBits(%d, %d) = %d, want upstream %d", deck, hand, got, want)
		}
	}
	n := 0
	for hand := 1; hand <= 16; hand++ {
		for deck := hand; deck <= 1<<16; deck++ {
			check(deck, hand)
			n++
		}
		for p := 16; p <= 26; p++ {
			for d := 1<<p - 2; d <= 1<<p+2 && d <= 1<<26; d++ {
				check(d, hand)
				n++
			}
		}
	}
	if fairslice.MaxHashBits != upstream.MaxHashBits {
		t.Errorf("MaxHashBits = %d, want upstream %d", fairslice.MaxHashBits, upstream.MaxHashBits)
	}
	t.Logf("%d (deck, hand) pairs compared", n)
}
