package shufflesharding_test

import (
	"fmt"

	"github.com/fairslice/fairslice/shufflesharding"
)

// A priority level with 128 queues deals each flow a hand of 8. The hand
// depends only on the flow's hash, so the same flow always lands on the same
// queues.
func ExampleDealer_DealIntoHand() {
	dealer, err := shufflesharding.NewDealer(128, 8)
	if err != nil {
		panic(err)
	}
	hand := make([]int, 0, dealer.HandSize()) // reused across deals: no allocations
	hand = dealer.DealIntoHand(0xdeadbeef, hand)
	fmt.Println(hand)
	// Output: [111 55 122 74 14 0 1 2]
}

func ExampleDealer_Deal() {
	dealer, _ := shufflesharding.NewDealer(16, 4)
	dealer.Deal(42, func(card int) { fmt.Print(card, " ") })
	fmt.Println()
	// Output: 10 2 0 1
}

// NewDealer refuses configurations whose deal would need more than
// MaxHashBits bits of hash, with the same message as Kubernetes.
func ExampleNewDealer() {
	_, err := shufflesharding.NewDealer(1024, 7)
	fmt.Println(err)
	fmt.Println(shufflesharding.RequiredEntropyBits(1024, 6), "bits for 1024 queues, hand 6")
	// Output:
	// required entropy bits of deckSize 1024 and handSize 7 is greater than 60
	// 60 bits for 1024 queues, hand 6
}

// FlowHash turns a FlowSchema name and flow distinguisher into the hash APF
// deals with; here the flow of user alice under the global-default schema,
// on the global-default priority level (128 queues, hand 6).
func ExampleFlowHash() {
	h := shufflesharding.FlowHash("global-default", "alice")
	dealer, _ := shufflesharding.NewDealer(128, 6)
	fmt.Printf("%#x %v\n", h, dealer.DealIntoHand(h, nil))
	// Output: 0xf4de3bd42ccdf6b7 [55 62 126 125 105 1]
}

// The odds that a quiet flow shares every one of its queues with at least
// one of 4 noisy flows, for two of the Kubernetes default priority levels.
func ExampleSquishProbability() {
	fmt.Printf("64 queues, hand 6, 4 elephants:  %.3g\n", shufflesharding.SquishProbability(64, 6, 4))
	fmt.Printf("128 queues, hand 6, 4 elephants: %.3g\n", shufflesharding.SquishProbability(128, 6, 4))
	// Output:
	// 64 queues, hand 6, 4 elephants:  0.000747
	// 128 queues, hand 6, 4 elephants: 1.61e-05
}
