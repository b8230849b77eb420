package shufflesharding

import (
	"fmt"
	"math"
)

// MaxHashBits is the number of hash bits a Dealer may rely on: NewDealer
// rejects a deck and hand whose deal would need more entropy than this.
//
// A deal consumes the whole 64-bit hash, but with fewer than 64 bits of
// headroom the last card would favour the low half of the deck by up to 2:3;
// capping the requirement at 60 bits keeps that skew within 32:33. The value
// and its meaning are the same as upstream's.
const MaxHashBits = 60

// maxDeckSize is the largest deck NewDealer accepts (1<<26), as upstream.
const maxDeckSize = 1 << 26

// maxHandSize is the largest hand any valid Dealer can have: a hand of h
// cards from a deck of at least h needs at least h·log2(h) bits, and 16·4 > 60.
const maxHandSize = 15

// RequiredEntropyBits returns ceil(log2(deckSize)·handSize), a slightly
// conservative estimate of the hash bits consumed by dealing handSize cards
// from deckSize. It is meaningful only for 1 ≤ handSize ≤ deckSize ≤ 1<<26,
// and is computed exactly as upstream computes it (in float64), so it agrees
// at every boundary.
func RequiredEntropyBits(deckSize, handSize int) int {
	return int(math.Ceil(math.Log2(float64(deckSize)) * float64(handSize)))
}

// Dealer deals hands of handSize distinct cards from a deck of deckSize
// cards, numbered 0 to deckSize-1, using a hash value as its only source of
// randomness. The same hash always yields the same hand in the same order,
// card for card identical to Kubernetes' k8s.io/apiserver/pkg/util/shufflesharding
// v0.37.2.
//
// A Dealer is immutable and safe for concurrent use. The zero value is not
// usable; create one with NewDealer. A deal costs O(handSize²) simple
// operations (handSize ≤ 15) and no allocations when the caller supplies a
// hand buffer.
type Dealer struct {
	deckSize int
	handSize int
	// divs[i] divides by the product of the first i+1 radices,
	// deckSize·(deckSize-1)···(deckSize-i). That product is below 2^60
	// because RequiredEntropyBits ≤ MaxHashBits, and dividing the hash by
	// each prefix product directly gives every quotient at once, instead
	// of a chain of handSize dependent divisions.
	divs [maxHandSize]divisor
}

// NewDealer returns a Dealer for the given deck and hand sizes.
//
// It accepts and rejects exactly what upstream's NewDealer does, checking in
// the same order and returning the same error text:
//   - deckSize or handSize not positive;
//   - handSize greater than deckSize;
//   - deckSize greater than 1<<26 ("impractically large");
//   - RequiredEntropyBits(deckSize, handSize) greater than MaxHashBits.
//
// The messages carry no package prefix so that they match upstream's
// byte for byte; each names the offending values.
func NewDealer(deckSize, handSize int) (*Dealer, error) {
	if deckSize <= 0 || handSize <= 0 {
		return nil, fmt.Errorf("deckSize %d or handSize %d is not positive", deckSize, handSize)
	}
	if handSize > deckSize {
		return nil, fmt.Errorf("handSize %d is greater than deckSize %d", handSize, deckSize)
	}
	if deckSize > maxDeckSize {
		return nil, fmt.Errorf("deckSize %d is impractically large", deckSize)
	}
	if RequiredEntropyBits(deckSize, handSize) > MaxHashBits {
		return nil, fmt.Errorf("required entropy bits of deckSize %d and handSize %d is greater than %d", deckSize, handSize, MaxHashBits)
	}
	d := &Dealer{deckSize: deckSize, handSize: handSize}
	prod := uint64(1)
	for i := 0; i < handSize; i++ {
		prod *= uint64(deckSize - i)
		d.divs[i] = newDivisor(prod)
	}
	return d, nil
}

// DeckSize returns the number of cards in the deck.
func (d *Dealer) DeckSize() int { return d.deckSize }

// HandSize returns the number of cards in each hand.
func (d *Dealer) HandSize() int { return d.handSize }

// Deal deals one hand for hashValue, calling pick once per card in deal
// order. Every card is in [0, DeckSize()) and no card repeats. Deal returns
// after the last pick; it makes no allocations of its own.
func (d *Dealer) Deal(hashValue uint64, pick func(int)) {
	var cards [maxHandSize]int
	d.deal(hashValue, cards[:d.handSize])
	for _, c := range cards[:d.handSize] {
		pick(c)
	}
}

// DealIntoHand deals one hand for hashValue into hand and returns it,
// resized to exactly HandSize() cards in deal order. It reuses hand's backing
// array when cap(hand) ≥ HandSize() and allocates a new one otherwise; the
// original contents are overwritten.
func (d *Dealer) DealIntoHand(hashValue uint64, hand []int) []int {
	if cap(hand) < d.handSize {
		hand = make([]int, d.handSize)
	}
	hand = hand[:d.handSize]
	d.deal(hashValue, hand)
	return hand
}

// deal writes the hand for hash into cards, which has length handSize.
//
// The hash is read as a mixed-radix number, least significant digit first,
// with radices deckSize, deckSize-1, …: digit i is the position of card i
// among the cards not yet dealt. Mapping that position back to a card number
// walks the earlier digits from the most recent to the first, stepping over
// each one at or below the running value; comparing against the raw digits
// (not the resulting cards) is what makes the mapping exact.
func (d *Dealer) deal(hash uint64, cards []int) {
	var digits [maxHandSize]int
	n := len(cards)
	// With q_i = hash / (radix_0···radix_i), digit i is q_{i-1} mod radix_i
	// = q_{i-1} - q_i·radix_i. The quotients are independent of each other.
	prev := hash
	for i := 0; i < n; i++ {
		q := d.divs[i].quo(hash)
		digits[i] = int(prev - q*uint64(d.deckSize-i))
		prev = q
	}
	for i := 0; i < n; i++ {
		c := digits[i]
		for j := i - 1; j >= 0; j-- {
			// c++ when c >= digits[j], without a branch: these
			// comparisons are data-dependent and mispredict half the time.
			c += int(uint(digits[j]-c-1) >> 63)
		}
		cards[i] = c
	}
}
