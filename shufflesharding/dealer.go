package shufflesharding

import (
	"fmt"
	"math"
	"math/bits"
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
	// all divides by the product of all handSize radices,
	// deckSize·(deckSize-1)···(deckSize-handSize+1), which is below 2^60
	// because RequiredEntropyBits ≤ MaxHashBits; only the hash modulo that
	// product determines the hand.
	all reciprocal
	// prefix[i] divides values below 2^63 by the product of the first i+1
	// radices. Dividing by each prefix product directly gives every
	// quotient at once, instead of a chain of dependent divisions.
	prefix [maxHandSize]narrowReciprocal
	// Cards 1 to handSize-1 are placed in packed lanes of lane bits
	// (one more than a card number needs), perWord to a word. The entropy
	// limit keeps every hand within two words, and within one except for
	// hands of more than 9 cards from decks of at most 128. laneOnes has a
	// 1 in the bottom bit of every lane of a word, and stepMask[j] selects,
	// in each word, the top bits of the lanes of the cards after card j.
	lane     uint
	perWord  int
	laneOnes uint64
	stepMask [maxHandSize][2]uint64
	// stepTops[i] has the top bits of the lowest handSize-1-i lanes: in
	// deal's one-word pass, the lanes that hold the cards after card i.
	stepTops [maxHandSize]uint64
	// allButLast divides any 64-bit value by the product of the first
	// handSize-1 radices (for hands of 2 or more).
	allButLast reciprocal
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
	if deckSize > 1 {
		prod := uint64(1)
		for i := 0; i < handSize; i++ {
			prod *= uint64(deckSize - i)
			d.prefix[i] = newNarrowReciprocal(prod)
		}
		d.all = newReciprocal(prod)
		if handSize > 1 {
			d.allButLast = newReciprocal(prod / uint64(deckSize-handSize+1))
		}
	}
	if deckSize > 1 {
		lane := uint(bits.Len(uint(deckSize-1))) + 1
		perWord := 64 / int(lane)
		if handSize-1 > 2*perWord {
			// Unreachable: h·log2(deck) ≤ 60 keeps h-1 ≤ 2·(64/lane).
			panic(fmt.Sprintf("shufflesharding: %d cards of %d bits do not fit in two words", handSize-1, lane))
		}
		d.lane, d.perWord = lane, perWord
		for k := 0; k < perWord; k++ {
			d.laneOnes |= 1 << (uint(k) * lane)
		}
		for i := 0; i < handSize; i++ {
			for k := 0; k < handSize-1-i && k < perWord; k++ {
				d.stepTops[i] |= 1 << (uint(k)*lane + lane - 1)
			}
		}
		for j := 0; j < handSize; j++ {
			for i := j + 1; i < handSize; i++ {
				k := i - 1 // card i's lane, counting from the first word
				d.stepMask[j][k/perWord] |= 1 << (uint(k%perWord)*lane + lane - 1)
			}
		}
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
// among the cards not yet dealt. placeCardsPacked2 explains how positions
// become cards.
func (d *Dealer) deal(hash uint64, cards []int) {
	n := len(cards)
	if d.deckSize == 1 || n-1 > d.perWord {
		d.dealDigits(hash, cards)
		return
	}
	// The common case, fused into one pass from the last card down. The
	// quotients q_i do not depend on each other, so the digits can be had
	// in any order; taking them from the last down, each digit i can take
	// its step on the cards after it (already in the word) at once, before
	// card i itself is shifted in at the bottom. The word ends with card 1
	// in the lowest lane.
	lane, ones := d.lane&63, d.laneOnes // & 63: bare shifts, no range checks
	top := (lane - 1) & 63
	low := uint64(1)<<top - 1
	x := hash - d.all.quo(hash)*d.all.d
	var w, q uint64 // q = q_i, starting with q_{n-1} = x / P = 0
	prefix, masks := d.prefix[:n], d.stepTops[:n]
	topBit := uint64(1) << top
	i := n - 1
	if i >= 1 {
		// The last digit straight from the hash, as hash / D_{n-2} mod
		// radix_{n-1}, so that the word does not wait for x; it is also
		// q_{n-2} for the digits below.
		digit := d.allButLast.quo(hash) - d.all.quo(hash)*uint64(d.deckSize-i)
		q = digit
		w = digit | topBit
		i--
	}
	for ; i >= 1; i-- {
		qPrev := prefix[i-1].quo(x)
		digit := qPrev - q*uint64(d.deckSize-i)
		q = qPrev
		// The step's top bits, shifted down by top to the lane's bottom and
		// then up by lane with the whole word, move up by lane-top = 1.
		w = w<<lane + ((w-digit*ones)&masks[i])<<1 + (digit | topBit)
	}
	first := x - q*uint64(d.deckSize) // q_{-1} = x
	w += ((w - first*ones) & masks[0]) >> top
	cards = cards[:n]
	cards[0] = int(first)
	for i := range cards[1:] {
		cards[1+i] = int(w & low)
		w >>= lane
	}
}

// dealDigits is deal for the hands that do not fit in one packed word, and
// for the one-card deck.
func (d *Dealer) dealDigits(hash uint64, cards []int) {
	if d.deckSize == 1 {
		cards[0] = 0
		return
	}
	// x = hash mod (radix_0···radix_{n-1}) < 2^60 has the same digits as
	// hash. With q_i = x / (radix_0···radix_i), digit i is
	// q_{i-1} mod radix_i = q_{i-1} - q_i·radix_i (q_{-1} = x), and the
	// quotients are independent of each other.
	var digits [maxHandSize]uint64
	n := len(cards)
	x := hash - d.all.quo(hash)*d.all.d
	prev := x
	for i := range n - 1 {
		q := d.prefix[i].quo(x)
		digits[i] = prev - q*uint64(d.deckSize-i)
		prev = q
	}
	digits[n-1] = prev
	d.placeCardsPacked2(digits[:n], cards)
}

// placeCardsPacked2 turns positions among the remaining cards into card
// numbers. Upstream states the mapping as: card i starts as digit i and
// walks the earlier digits from the latest to the first, stepping up by one
// past each digit at or below its running value (comparing against the raw
// earlier digits, not the cards they became: the exact inverse of removing
// dealt cards from the deck one at a time).
//
// The cards' walks are independent of each other, so instead each earlier
// digit, latest first, takes its step on every later card at once, with the
// running values of cards 1 to n-1 (card 0 takes no steps) packed into the
// lanes of two words; deal does the same in one word for the hands that fit.
// Every value fits in lane-1 bits and is stored with its lane's top bit set.
// Subtracting a digit from every lane at once then never borrows across
// lanes, and a lane's top bit survives exactly when its value is at least
// the digit: shifted down to the lane's bottom bit, that is the step to add.
func (d *Dealer) placeCardsPacked2(digits []uint64, cards []int) {
	lane, per, ones := d.lane&63, d.perWord, d.laneOnes
	top := (lane - 1) & 63
	n := len(digits)
	var lo, hi uint64
	for i := n - 1; i > per; i-- {
		hi = hi<<lane | digits[i]
	}
	for i := per; i >= 1; i-- {
		lo = lo<<lane | digits[i]
	}
	lo |= ones << top
	hi |= ones << top
	for j := n - 2; j >= 0; j-- {
		b := digits[j] * ones
		lo += ((lo - b) & d.stepMask[j][0]) >> top
		hi += ((hi - b) & d.stepMask[j][1]) >> top
	}
	cards = cards[:n]
	cards[0] = int(digits[0])
	low := uint64(1)<<top - 1
	for i := range cards[1 : 1+per] {
		cards[1+i] = int(lo & low)
		lo >>= lane
	}
	for i := range cards[1+per:] {
		cards[1+per+i] = int(hi & low)
		hi >>= lane
	}
}
