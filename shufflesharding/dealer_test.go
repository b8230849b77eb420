package shufflesharding

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// referenceDeal is the plain statement of the deal: read the hash as a
// mixed-radix number, and use each digit as a position among the cards still
// in the deck, counting up past the cards already dealt (kept sorted).
func referenceDeal(deckSize, handSize int, hash uint64) []int {
	var hand, dealt []int
	for i := 0; i < handSize; i++ {
		radix := uint64(deckSize - i)
		card := int(hash % radix)
		hash /= radix
		for _, d := range dealt { // ascending
			if d <= card {
				card++
			}
		}
		hand = append(hand, card)
		dealt = append(dealt, card)
		slices.Sort(dealt)
	}
	return hand
}

// validConfig draws a (deckSize, handSize) pair NewDealer accepts.
func validConfig(t *rapid.T) (int, int) {
	deck := rapid.OneOf(rapid.IntRange(1, 64), rapid.IntRange(1, 4096), rapid.IntRange(1, 1<<26)).Draw(t, "deck")
	maxHand := 1
	for h := 1; h <= deck && h <= maxHandSize; h++ {
		if RequiredEntropyBits(deck, h) <= MaxHashBits {
			maxHand = h
		}
	}
	return deck, rapid.IntRange(1, maxHand).Draw(t, "hand")
}

func TestDealMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		deck, hand := validConfig(t)
		hash := rapid.Uint64().Draw(t, "hash")
		d, err := NewDealer(deck, hand)
		if err != nil {
			t.Fatalf("NewDealer(%d, %d) = %v", deck, hand, err)
		}
		got := d.DealIntoHand(hash, nil)
		if want := referenceDeal(deck, hand, hash); !slices.Equal(got, want) {
			t.Fatalf("DealIntoHand(%#x) with (%d, %d) = %v, want %v", hash, deck, hand, got, want)
		}
	})
}

func TestDealCardsDistinctAndInRange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		deck, hand := validConfig(t)
		hash := rapid.Uint64().Draw(t, "hash")
		d, _ := NewDealer(deck, hand)
		seen := map[int]bool{}
		n := 0
		d.Deal(hash, func(c int) {
			n++
			if c < 0 || c >= deck {
				t.Fatalf("Deal(%#x) with (%d, %d) picked %d, out of range", hash, deck, hand, c)
			}
			if seen[c] {
				t.Fatalf("Deal(%#x) with (%d, %d) picked %d twice", hash, deck, hand, c)
			}
			seen[c] = true
		})
		if n != hand {
			t.Fatalf("Deal(%#x) with (%d, %d) picked %d cards, want %d", hash, deck, hand, n, hand)
		}
	})
}

// TestDealPrefixProperty: with the same deck and hash, a smaller hand is a
// prefix of a larger one.
func TestDealPrefixProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		deck, hand := validConfig(t)
		small := rapid.IntRange(1, hand).Draw(t, "small")
		hash := rapid.Uint64().Draw(t, "hash")
		big, _ := NewDealer(deck, hand)
		little, _ := NewDealer(deck, small)
		b := big.DealIntoHand(hash, nil)
		l := little.DealIntoHand(hash, nil)
		if !slices.Equal(b[:small], l) {
			t.Fatalf("hands for %#x: (%d,%d) = %v does not start with (%d,%d) = %v", hash, deck, hand, b, deck, small, l)
		}
	})
}

// TestDealExhaustiveUniformity deals every hash in [0, P·k) for small decks,
// where P = deck!/(deck-hand)! is the number of ordered hands, and requires
// every ordered hand exactly k times: the deal is a bijection on each block
// of P consecutive hashes.
func TestDealExhaustiveUniformity(t *testing.T) {
	for _, c := range []struct{ deck, hand, k int }{{1, 1, 3}, {5, 2, 4}, {6, 3, 2}, {8, 4, 2}, {10, 3, 3}, {12, 5, 1}, {7, 7, 1}} {
		t.Run(fmt.Sprintf("deck=%d,hand=%d", c.deck, c.hand), func(t *testing.T) {
			d, err := NewDealer(c.deck, c.hand)
			if err != nil {
				t.Fatal(err)
			}
			p := 1
			for i := 0; i < c.hand; i++ {
				p *= c.deck - i
			}
			counts := map[[maxHandSize]int]int{}
			buf := make([]int, c.hand)
			for h := 0; h < p*c.k; h++ {
				var key [maxHandSize]int
				copy(key[:], d.DealIntoHand(uint64(h), buf))
				counts[key]++
			}
			if len(counts) != p {
				t.Fatalf("%d distinct ordered hands, want %d", len(counts), p)
			}
			for hand, n := range counts {
				if n != c.k {
					t.Fatalf("hand %v dealt %d times, want %d", hand[:c.hand], n, c.k)
				}
			}
		})
	}
}

// TestDealUniformOverRandomHashes checks card frequencies on a large deck
// against k/n within 5 standard deviations.
func TestDealUniformOverRandomHashes(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	const deck, hand, trials = 128, 8, 200000
	d, _ := NewDealer(deck, hand)
	var counts [deck]int
	buf := make([]int, hand)
	for i := 0; i < trials; i++ {
		for _, c := range d.DealIntoHand(r.Uint64(), buf) {
			counts[c]++
		}
	}
	mean := float64(trials*hand) / deck
	sd := math.Sqrt(mean)
	for c, n := range counts {
		if math.Abs(float64(n)-mean) > 5*sd {
			t.Errorf("card %d dealt %d times, want %.0f ± %.0f", c, n, mean, 5*sd)
		}
	}
}

func TestNewDealer(t *testing.T) {
	cases := []struct {
		deck, hand int
		err        string
	}{
		{128, 8, ""}, {1024, 6, ""}, {16, 15, ""}, {15, 15, ""}, {64, 10, ""}, {256, 7, ""}, {1 << 26, 1, ""}, {1, 1, ""},
		{0, 1, "deckSize 0 or handSize 1 is not positive"},
		{-1, -1, "deckSize -1 or handSize -1 is not positive"},
		{8, 0, "deckSize 8 or handSize 0 is not positive"},
		{8, 9, "handSize 9 is greater than deckSize 8"},
		{1<<26 + 1, 1, "deckSize 67108865 is impractically large"},
		{1<<26 + 1, 1<<26 + 2, "handSize 67108866 is greater than deckSize 67108865"},
		{1024, 7, "required entropy bits of deckSize 1024 and handSize 7 is greater than 60"},
		{128, 9, "required entropy bits of deckSize 128 and handSize 9 is greater than 60"},
		{512, 8, "required entropy bits of deckSize 512 and handSize 8 is greater than 60"},
		{17, 15, "required entropy bits of deckSize 17 and handSize 15 is greater than 60"},
		{16, 16, "required entropy bits of deckSize 16 and handSize 16 is greater than 60"},
		{10000000, 3, "required entropy bits of deckSize 10000000 and handSize 3 is greater than 60"},
	}
	for _, c := range cases {
		d, err := NewDealer(c.deck, c.hand)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("NewDealer(%d, %d) = %v, want success", c.deck, c.hand, err)
		case c.err == "" && (d.DeckSize() != c.deck || d.HandSize() != c.hand):
			t.Errorf("NewDealer(%d, %d) has sizes (%d, %d)", c.deck, c.hand, d.DeckSize(), d.HandSize())
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("NewDealer(%d, %d) = %v, want error %q", c.deck, c.hand, err, c.err)
		}
	}
}

func TestRequiredEntropyBits(t *testing.T) {
	for _, c := range []struct{ deck, hand, want int }{{1024, 6, 60}, {512, 8, 72}, {128, 8, 56}, {1 << 26, 1, 26}, {15, 15, 59}, {1, 1, 0}} {
		if got := RequiredEntropyBits(c.deck, c.hand); got != c.want {
			t.Errorf("RequiredEntropyBits(%d, %d) = %d, want %d", c.deck, c.hand, got, c.want)
		}
	}
}

// TestDealVectors pins hands from kubernetes-apf.md §1.3-1.4 and
// driving-upstream.md §1 (upstream output); testdata/ holds many more.
func TestDealVectors(t *testing.T) {
	for _, c := range []struct {
		deck, hand int
		hash       uint64
		want       []int
	}{
		{128, 8, 0, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{128, 8, 1, []int{1, 0, 2, 3, 4, 5, 6, 7}},
		{128, 8, 0xdeadbeef, []int{111, 55, 122, 74, 14, 0, 1, 2}},
		{128, 8, 0x0123456789abcdef, []int{111, 33, 73, 64, 85, 1, 12, 54}},
		{128, 8, 0xffffffffffffffff, []int{127, 1, 7, 56, 91, 6, 41, 0}},
		{64, 6, 0xdeadbeef, []int{47, 36, 42, 63, 4, 5}},
		{64, 8, 0x0123456789abcdef, []int{47, 22, 49, 59, 8, 37, 42, 24}},
		{10, 3, 0xffffffffffffffff, []int{5, 1, 0}},
		{1024, 6, 0xffffffffffffffff, []int{1023, 15, 497, 420, 22, 243}},
		{128, 6, 12345678901234567890, []int{82, 108, 124, 106, 90, 52}},
		{64, 6, 0xdeadbeefcafebabe, []int{62, 52, 53, 30, 23, 46}},
		{16, 4, 42, []int{10, 2, 0, 1}},
	} {
		d, err := NewDealer(c.deck, c.hand)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.DealIntoHand(c.hash, nil); !slices.Equal(got, c.want) {
			t.Errorf("NewDealer(%d, %d).DealIntoHand(%#x) = %v, want %v", c.deck, c.hand, c.hash, got, c.want)
		}
	}
}

func TestDealIntoHandBuffer(t *testing.T) {
	d, _ := NewDealer(64, 6)
	want := d.DealIntoHand(99, nil)
	big := make([]int, 10, 20)
	got := d.DealIntoHand(99, big)
	if len(got) != 6 || &got[0] != &big[0] || !slices.Equal(got, want) {
		t.Errorf("DealIntoHand(99, len 10 buffer) = %v (len %d), want %v in the same array", got, len(got), want)
	}
	small := make([]int, 2)
	if got := d.DealIntoHand(99, small); !slices.Equal(got, want) {
		t.Errorf("DealIntoHand(99, len 2 buffer) = %v, want %v", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { d.DealIntoHand(99, big) }); n != 0 {
		t.Errorf("DealIntoHand with a large enough buffer allocates %v times, want 0", n)
	}
}

func TestFlowHash(t *testing.T) {
	for _, c := range []struct {
		fs, dist string
		want     uint64
	}{
		{"global-default", "alice", 17644606172554983095},
		{"global-default", "", 5449774753716172163},
	} {
		if got := FlowHash(c.fs, c.dist); got != c.want {
			t.Errorf("FlowHash(%q, %q) = %d, want %d", c.fs, c.dist, got, c.want)
		}
	}
	long := string(make([]byte, 1000))
	if FlowHash(long, "x") == FlowHash(long+"x", "") {
		t.Errorf("FlowHash does not separate the schema name from the distinguisher")
	}
	if n := testing.AllocsPerRun(100, func() { FlowHash("global-default", "system:serviceaccount:kube-system:generic") }); n != 0 {
		t.Errorf("FlowHash allocates %v times, want 0", n)
	}
}

func FuzzDealer(f *testing.F) {
	f.Add(128, 8, uint64(0xdeadbeef))
	f.Add(1024, 6, uint64(math.MaxUint64))
	f.Add(0, 0, uint64(0))
	f.Add(16, 15, uint64(42))
	f.Add(1<<26, 1, uint64(1<<63))
	f.Fuzz(func(t *testing.T, deck, hand int, hash uint64) {
		d, err := NewDealer(deck, hand)
		valid := deck > 0 && hand > 0 && hand <= deck && deck <= 1<<26 && RequiredEntropyBits(deck, hand) <= MaxHashBits
		if (err == nil) != valid {
			t.Fatalf("NewDealer(%d, %d) error = %v, want valid=%v", deck, hand, err, valid)
		}
		if err != nil {
			return
		}
		got := d.DealIntoHand(hash, nil)
		if want := referenceDeal(deck, hand, hash); !slices.Equal(got, want) {
			t.Fatalf("DealIntoHand(%#x) with (%d, %d) = %v, want %v", hash, deck, hand, got, want)
		}
	})
}

func BenchmarkDealIntoHand(b *testing.B) {
	for _, c := range []struct{ deck, hand int }{{128, 8}, {64, 6}, {1024, 6}, {16, 4}, {1 << 20, 3}} {
		b.Run(fmt.Sprintf("deck=%d,hand=%d", c.deck, c.hand), func(b *testing.B) {
			d, _ := NewDealer(c.deck, c.hand)
			buf := make([]int, c.hand)
			h := uint64(0x9e3779b97f4a7c15)
			b.ReportAllocs()
			for b.Loop() {
				h = h*6364136223846793005 + 1442695040888963407
				buf = d.DealIntoHand(h, buf)
			}
		})
	}
}

func BenchmarkFlowHash(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		FlowHash("global-default", "system:serviceaccount:kube-system:generic-garbage-collector")
	}
}

// TestNewDealerPacksEveryValidHand constructs a Dealer for every valid hand
// size at each deck size where the lane width changes (the smallest deck of
// each width has the most cards a hand), so NewDealer's two-word invariant
// is checked where it is tightest.
func TestNewDealerPacksEveryValidHand(t *testing.T) {
	for k := 0; k <= 26; k++ {
		for _, deck := range []int{1<<k - 1, 1 << k, 1<<k + 1} {
			if deck < 1 || deck > maxDeckSize {
				continue
			}
			for hand := 1; hand <= maxHandSize && hand <= deck; hand++ {
				if RequiredEntropyBits(deck, hand) > MaxHashBits {
					break
				}
				d, err := NewDealer(deck, hand)
				if err != nil {
					t.Fatalf("NewDealer(%d, %d) = %v", deck, hand, err)
				}
				got := d.DealIntoHand(0xfedcba9876543210, nil)
				if want := referenceDeal(deck, hand, 0xfedcba9876543210); !slices.Equal(got, want) {
					t.Fatalf("NewDealer(%d, %d).DealIntoHand(0xfedcba9876543210) = %v, want %v", deck, hand, got, want)
				}
			}
		}
	}
}
