package apf_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fairslice/fairslice/apf"
)

// A FlowLimiter holds one flow to a cap of seats (package apf/fleet sets
// the caps from the fleet's summaries) and measures every flow.
func ExampleFlowLimiter() {
	fl := apf.NewFlowLimiter()
	c, err := apf.New(nil, apf.Options{ServerConcurrencyLimit: 600, FlowLimiter: fl})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fl.SetCaps(map[apf.FlowKey]float64{{PriorityLevel: "global-default", FlowSchema: "global-default", Distinguisher: "alice"}: 1})
	alice := &apf.Request{User: apf.User{Name: "alice", Groups: []string{"system:authenticated"}},
		Info: apf.RequestInfo{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Resource: "pods", Namespace: "a", Name: "p"}}
	first, err := c.Wait(context.Background(), alice, nil)
	fmt.Println("first:", err)
	_, err = c.Wait(context.Background(), alice, nil)
	var rej *apf.RejectedError
	if errors.As(err, &rej) {
		fmt.Println("second:", rej.Reason)
	}
	first.Finish()
	for _, u := range fl.TakeUsage(time.Now()) {
		fmt.Println(u.Flow.Distinguisher, "held a request; refused one")
	}
	// Output:
	// first: <nil>
	// second: concurrency-limit
	// alice held a request; refused one
}

// A TargetedGoAway closes at most one connection of each target flow per
// interval; give it to HandlerOptions.GoAway. Package apf/fleet's
// Coordinator sets the targets every round.
func ExampleTargetedGoAway() {
	g, err := apf.NewTargetedGoAway(time.Second)
	if err != nil {
		panic(err)
	}
	flow := func(user string) apf.FlowKey {
		return apf.FlowKey{PriorityLevel: "global-default", FlowSchema: "global-default", Distinguisher: user}
	}
	g.SetTargets([]apf.FlowKey{flow("heavy"), flow("busy")})
	t0 := time.Unix(0, 0)
	t1, t2 := t0.Add(time.Millisecond), t0.Add(time.Second)
	fmt.Println(g.Closes(t0, t0, flow("heavy")), g.Closes(t0, t0, flow("busy")), g.Closes(t1, t1, flow("heavy")),
		g.Closes(t1, t1, flow("light")), g.Closes(t2, t2, flow("heavy")))
	// Output: true true false false true
}
