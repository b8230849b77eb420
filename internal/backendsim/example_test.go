package backendsim_test

import (
	"fmt"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/internal/backendsim"
)

// An adaptive total in front of a backend of 8 slots that halves to 4 at
// 5 s: the total found before and after, and the goodput.
func ExampleRun() {
	r, err := backendsim.Run(backendsim.Config{
		Slots: 8, Changes: []backendsim.Change{{At: 5 * time.Second, Slots: 4}},
		Duration: 10 * time.Second, Static: 600, Adaptive: &apf.AdaptiveOptions{},
	})
	if err != nil {
		panic(err)
	}
	for _, p := range r.Trace {
		if p.At == 4*time.Second || p.At == 9*time.Second {
			fmt.Printf("at %v: %d slots, total %d\n", p.At, p.Slots, p.Total)
		}
	}
	fmt.Printf("goodput %.0f/s of %d/s possible\n", r.Goodput, (8*5+4*5)*50/10)
	// Output:
	// at 4s: 8 slots, total 10
	// at 9s: 4 slots, total 6
	// goodput 280/s of 300/s possible
}
