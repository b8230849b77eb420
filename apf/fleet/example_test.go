package fleet_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/fleet"
)

// A replica joining a fleet through a store: its controller adjusts only
// when the Coordinator's round runs, asks the Coordinator for the fleet's
// level limits in every seat plan, and its FlowLimiter takes the caps.
// Alone in its fleet, it decides as an uncoordinated controller does.
func ExampleJoin() {
	c, co, err := fleet.Join(nil, apf.Options{ServerConcurrencyLimit: 600}, fleet.CoordinatorConfig{
		Replica: "replica-0", Store: fleet.NewMemoryStore(), Period: time.Second,
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	// A server calls co.Start() and defer co.Close(); here one round.
	if err := co.Round(context.Background(), time.Now()); err != nil {
		panic(err)
	}
	fmt.Println("peers:", co.Peers())
	fmt.Println("global-default seats:", c.Limits()["global-default"].Current)
	// Output:
	// peers: 0
	// global-default seats: 56
}
