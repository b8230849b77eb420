package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"text/tabwriter"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/fairqueue/scenario"
	"github.com/fairslice/fairslice/shufflesharding"
)

// fairQueueSection runs one noisy user against four quiet ones through a
// priority level of 4 seats, once with APF's fair queuing (64 queues, hands
// of 6) and once with a single FIFO queue of the same total length, and
// prints what each user got.
func fairQueueSection(w io.Writer) error {
	const (
		seats    = 4
		duration = 100 * time.Millisecond // 4 seats serve 40 requests/s
		span     = 10 * time.Second
		wait     = fairqueue.DefaultWaitLimit // upstream's default: a quarter of the 60s request timeout
	)
	users := []struct {
		name string
		rate int // requests per second
	}{{"noisy", 200}, {"quiet-1", 5}, {"quiet-2", 5}, {"quiet-3", 5}, {"quiet-4", 5}}

	// Poisson arrivals from a fixed seed: the same run every time.
	rng := rand.New(rand.NewPCG(1, 2))
	var reqs []scenario.Request
	for _, user := range users {
		hash := shufflesharding.FlowHash("global-default", user.name)
		next := func() time.Duration {
			return time.Duration(rng.ExpFloat64() / float64(user.rate) * float64(time.Second))
		}
		for t, k := next(), 0; t < span; t, k = t+next(), k+1 {
			reqs = append(reqs, scenario.Request{
				ID: fmt.Sprintf("%s-%d", user.name, k), Arrival: t, Hash: hash,
				InitialSeats: 1, Duration: duration, WaitLimit: wait,
			})
		}
	}
	fmt.Fprintf(w, "A priority level with %d seats; every request holds one seat for %v and gives up\n", seats, duration)
	fmt.Fprintf(w, "after waiting %v. One user sends %d requests/s, four others %d/s each, for %v.\n\n",
		wait, users[0].rate, users[1].rate, span)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "queuing\tuser\tsent\tserved\trejected\ttimed out\tp90 wait\t")
	for _, c := range []struct {
		name string
		cfg  scenario.Config
	}{
		{"fair (64 queues, hand 6)", scenario.Config{Queues: 64, HandSize: 6, QueueLengthLimit: 50, ConcurrencyLimit: seats}},
		{"one FIFO queue", scenario.Config{Queues: 1, HandSize: 1, QueueLengthLimit: 50, ConcurrencyLimit: seats}},
	} {
		s := &scenario.Scenario{Config: c.cfg, Requests: reqs}
		results, err := scenario.Run(s, scenario.NewEngine())
		if err != nil {
			return err
		}
		sum := scenario.Summarize(s, results)
		for _, user := range users {
			hash := shufflesharding.FlowHash("global-default", user.name)
			for _, f := range sum.Flows {
				if f.Hash != hash {
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%v\t\n", c.name, user.name, f.Requests, f.Dispatched, f.Rejected, f.TimedOut, f.WaitP90.Round(time.Millisecond))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nWith fair queuing every quiet request is served within a fraction of a second")
	fmt.Fprintln(w, "and only the noisy user is turned away (its queues are full). Behind one FIFO")
	fmt.Fprintln(w, "queue the noisy user keeps the queue full, so most quiet requests are rejected")
	fmt.Fprintln(w, "and the rest wait behind its backlog. (Quiet requests still wait a little under")
	fmt.Fprintln(w, "APF: the noisy user's oldest waiting requests keep their earlier virtual start.)")
	return nil
}
