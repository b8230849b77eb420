// Package shuffleshardingcompare holds differential tests and side-by-side
// benchmarks of fairslice's shufflesharding.Dealer against the dealer in
// Kubernetes' k8s.io/apiserver/pkg/util/shufflesharding (the version
// required by this module's go.mod, v0.37.2).
//
// The package has no non-test code; everything is in its _test.go files:
//
//   - TestDifferentialDeal deals at least a million random (deckSize,
//     handSize, hash) cases through both dealers and compares the hands card
//     by card, in deal order, for both Deal and DealIntoHand. Deck and hand
//     sizes are drawn so that every hand size from 1 to 15 is exercised with
//     small decks, large decks and decks at the entropy limit; hashes mix
//     uniform 64-bit values, values below 2^60 and small values. The seed is
//     logged; set FAIRSLICE_SEED to replay a run and FAIRSLICE_DIFF_CASES to
//     change the number of cases.
//   - TestDifferentialNewDealer compares NewDealer's accept/reject decision
//     and exact error text, and RequiredEntropyBits, on boundary sizes: every
//     hand size 1..16 against decks around its entropy limit, non-positive
//     sizes, and the 1<<26 deck limit.
//   - TestDifferentialRequiredEntropyBits compares RequiredEntropyBits over
//     about a million (deckSize, handSize) pairs where upstream documents
//     it as meaningful (1 <= handSize <= deckSize <= 1<<26), and MaxHashBits.
//   - BenchmarkDealIntoHand runs both dealers on the same workloads
//     (sub-benchmarks impl=upstream/... and impl=fairslice/..., so that
//     benchstat -col /impl sets them side by side), reusing the hand
//     buffer and advancing the hash with a linear congruential step.
//
// Run them from the kube/ directory:
//
//	go test ./verify/compare/shufflesharding/
//	FAIRSLICE_SEED=12345 go test -run Differential -v ./verify/compare/shufflesharding/
//	go test -run '^$' -bench DealIntoHand -benchmem -count 6 ./verify/compare/shufflesharding/
package shuffleshardingcompare
