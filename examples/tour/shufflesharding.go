package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/fairslice/fairslice/shufflesharding"
)

// shuffleShardingSection prints the exact collision odds for the Kubernetes
// documentation's example configurations and the default priority levels,
// then deals real flows to show how rarely a quiet flow ends up with no
// queue free of noisy ones.
func shuffleShardingSection(w io.Writer) error {
	fmt.Fprintln(w, "Probability that a quiet flow (mouse) shares every queue in its hand with")
	fmt.Fprintln(w, "some noisy flow (elephant); hands are uniformly random, computed exactly.")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "configuration\tqueues\thand\t1 elephant\t4 elephants\t16 elephants\t")
	rows := []struct {
		name         string
		queues, hand int
	}{
		// The Kubernetes docs' "Example Shuffle Sharding Configurations".
		{"docs", 32, 12}, {"docs", 32, 10}, {"docs", 64, 10}, {"docs", 64, 9}, {"docs", 64, 8},
		{"docs", 128, 8}, {"docs", 128, 7}, {"docs", 256, 7}, {"docs", 256, 6}, {"docs", 512, 6}, {"docs", 1024, 6},
		// The queuing priority levels Kubernetes installs by default.
		{"system, node-high", 64, 6}, {"leader-election", 16, 4}, {"workload-high, workload-low, global-default", 128, 6},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3g\t%.3g\t%.3g\t\n", r.name, r.queues, r.hand,
			shufflesharding.SquishProbability(r.queues, r.hand, 1),
			shufflesharding.SquishProbability(r.queues, r.hand, 4),
			shufflesharding.SquishProbability(r.queues, r.hand, 16))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	// Deal real flows on the global-default level: 4 noisy users and 10,000
	// quiet ones, hashed exactly as APF hashes them.
	const queues, hand, noisy, quiet = 128, 6, 4, 10000
	dealer, err := shufflesharding.NewDealer(queues, hand)
	if err != nil {
		return err
	}
	var covered [queues]bool
	for i := 0; i < noisy; i++ {
		for _, q := range dealer.DealIntoHand(shufflesharding.FlowHash("global-default", fmt.Sprintf("noisy-%d", i)), nil) {
			covered[q] = true
		}
	}
	nCovered := 0
	for _, c := range covered {
		if c {
			nCovered++
		}
	}
	squished, sharedSome := 0, 0
	buf := make([]int, hand)
	for i := 0; i < quiet; i++ {
		shared := 0
		for _, q := range dealer.DealIntoHand(shufflesharding.FlowHash("global-default", fmt.Sprintf("quiet-%d", i)), buf) {
			if covered[q] {
				shared++
			}
		}
		if shared > 0 {
			sharedSome++
		}
		if shared == hand {
			squished++
		}
	}
	fmt.Fprintf(w, "\nDealing on global-default (%d queues, hand %d): %d noisy users occupy %d queues.\n", queues, hand, noisy, nCovered)
	fmt.Fprintf(w, "Of %d quiet users, %d share at least one queue with them, and %d share all %d\n", quiet, sharedSome, squished, hand)
	fmt.Fprintf(w, "(expected for random hands: %.2g). The other %d keep at least one queue no noisy\n",
		float64(quiet)*shufflesharding.SquishProbability(queues, hand, noisy), quiet-squished)
	fmt.Fprintln(w, "user can reach, and APF puts each request in the least-loaded queue of its hand.")
	return nil
}
