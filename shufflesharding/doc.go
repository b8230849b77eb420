// Package shufflesharding deals hands of queues to flows, as Kubernetes API
// Priority and Fairness (APF) does, and quantifies how well that isolates a
// quiet flow from noisy ones.
//
// # The model
//
// A deck of deckSize cards stands for a priority level's queues. Each flow
// hashes to a 64-bit value and is dealt a hand of handSize distinct cards
// from it; the flow may only use the queues in its hand. Two flows share a
// queue only when their hands overlap, and a mouse (a low-rate flow) is
// harmed by elephants (high-rate flows) only if every queue in its hand is
// also in some elephant's hand. With 128 queues and hands of 8 there are
// C(128, 8) ≈ 1.4·10^12 possible hands, so that is rare: SquishProbability
// gives the exact odds.
//
// # Compatibility with Kubernetes
//
// Dealer, NewDealer, RequiredEntropyBits and MaxHashBits have the names,
// signatures and behaviour of k8s.io/apiserver/pkg/util/shufflesharding
// v0.37.2: the same hand, card for card and in the same order, for every
// valid deck, hand and hash, and the same validation with the same error
// text. FlowHash is APF's flow hash (upstream's unexported hashFlowID), so a
// FlowSchema name and distinguisher lead to the hand APF would deal. The
// kube/ module checks both against upstream's code over millions of random
// cases, and testdata/ holds vectors produced by it.
//
// Dealing is faster than upstream's: a Dealer precomputes fixed-point
// reciprocals of the products of its radices, so a deal needs independent
// multiplications instead of a chain of hardware divisions, and maps digits
// to cards without data-dependent branches. With a reused hand buffer it
// never allocates.
//
// # Beyond Kubernetes
//
// The upstream dealer depends on deckSize: adding one queue reshuffles
// nearly every hand. Picker deals shards over named members instead, by
// rendezvous hashing within zones, so that a membership change moves at most
// one member of any shard, larger shards contain smaller ones, and shards
// spread evenly over zones; OverlapDistribution gives the exact distribution
// of how many members two shards share.
//
// Everything here is deterministic and free of global state; a Dealer and
// a Picker are immutable and safe for concurrent use.
package shufflesharding
