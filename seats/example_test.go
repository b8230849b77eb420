package seats_test

import (
	"fmt"
	"log"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

// The default configuration's limits at a server concurrency of 600.
func ExampleComputeLimits() {
	c, err := flowschema.Compile(flowschema.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	limits, err := seats.ComputeLimits(600, c.PriorityLevels())
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range limits {
		fmt.Printf("%-16s nominal %3d  min %3d  max %4d  max seats %2d\n", l.Name, l.NominalCL, l.MinCL, l.MaxCL, l.MaxSeats)
	}
	// Output:
	// catch-all        nominal  13  min  13  max  613  max seats  0
	// exempt           nominal   0  min   0  max  600  max seats  0
	// system           nominal  74  min  50  max  674  max seats 12
	// node-high        nominal  98  min  73  max  698  max seats 15
	// leader-election  nominal  25  min  25  max  625  max seats  4
	// workload-high    nominal  98  min  49  max  698  max seats 15
	// workload-low     nominal 245  min  24  max  845  max seats 37
	// global-default   nominal  49  min  24  max  649  max seats  8
}

// One borrowing adjustment while exempt requests hold 100 seats: upstream
// still divides all 602 nominal seats among the other levels, so the
// limits add up to more than the server has; SubtractExemptUsage divides
// only what exempt leaves.
func ExampleBorrow() {
	c, err := flowschema.Compile(flowschema.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	limits, err := seats.ComputeLimits(600, c.PriorityLevels())
	if err != nil {
		log.Fatal(err)
	}
	levels := make([]seats.BorrowingLevel, len(limits))
	for i, l := range limits {
		levels[i] = seats.BorrowingLevel{Limits: l, CurrentCL: l.InitialCL}
		demand := fairqueue.DemandResults{Duration: 10, Average: 5, Max: 8} // seats, over 10 s
		if l.Exempt {
			demand = fairqueue.DemandResults{Duration: 10, Average: 80, Max: 100}
		}
		levels[i].Demand.Update(demand)
	}
	for _, opts := range []seats.BorrowingOptions{{}, {SubtractExemptUsage: true}} {
		a := seats.Borrow(600, levels, opts)
		fmt.Printf("SubtractExemptUsage=%v: %v regime, limits total %d of %d nominal seats (over by %d)\n",
			opts.SubtractExemptUsage, a.Regime, a.Total(), a.NominalCLSum, a.Overcommit())
	}
	// Output:
	// SubtractExemptUsage=false: fair regime, limits total 701 of 602 nominal seats (over by 99)
	// SubtractExemptUsage=true: fair regime, limits total 602 of 602 nominal seats (over by 0)
}
