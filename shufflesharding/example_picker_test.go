package shufflesharding_test

import (
	"fmt"

	"github.com/fairslice/fairslice/shufflesharding"
)

// A Picker keeps a key's shard when members come and go: adding a queue
// moves at most one member of any shard.
func ExamplePicker() {
	var queues []shufflesharding.Member
	for _, name := range []string{"q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7"} {
		queues = append(queues, shufflesharding.Member{Name: name})
	}
	before, err := shufflesharding.NewPicker(queues)
	if err != nil {
		panic(err)
	}
	after, err := shufflesharding.NewPicker(append(queues, shufflesharding.Member{Name: "q8"}))
	if err != nil {
		panic(err)
	}
	for _, key := range []uint64{1, 2, 3} {
		fmt.Println(key, pickerExampleNames(before.Shard(key, 3)), pickerExampleNames(after.Shard(key, 3)))
	}
	// Output:
	// 1 [q1 q0 q3] [q1 q0 q3]
	// 2 [q7 q3 q2] [q7 q8 q3]
	// 3 [q5 q0 q1] [q5 q0 q1]
}

// With zones, a shard takes members from the zones in turn, in an order of
// zones that depends on the key.
func ExamplePicker_zones() {
	var members []shufflesharding.Member
	for _, zone := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		for i := range 3 {
			members = append(members, shufflesharding.Member{Name: fmt.Sprintf("%s-%d", zone[len(zone)-1:], i), Zone: zone})
		}
	}
	p, err := shufflesharding.NewPicker(members)
	if err != nil {
		panic(err)
	}
	for _, m := range p.Shard(42, 4) {
		fmt.Println(m.Name, m.Zone)
	}
	// Output:
	// a-2 us-east-1a
	// b-1 us-east-1b
	// c-2 us-east-1c
	// a-1 us-east-1a
}

// ShardInto reuses the caller's buffer and does not allocate when it is
// large enough; the indices refer to the members given to NewPicker.
func ExamplePicker_ShardInto() {
	p, err := shufflesharding.NewPicker([]shufflesharding.Member{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}})
	if err != nil {
		panic(err)
	}
	hand := make([]int, 0, 2)
	for key := range uint64(3) {
		hand = p.ShardInto(key, 2, hand)
		fmt.Println(key, hand)
	}
	// Output:
	// 0 [2 1]
	// 1 [1 0]
	// 2 [0 2]
}

// The overlap distribution sizes shards: the Cortex guide's 50 ingesters
// with 4 per tenant, and 90 members with 3 per shard with and without
// three zones of 30, where zones make overlaps likelier.
func ExampleOverlapDistribution() {
	for _, c := range []struct {
		zones []int
		size  int
	}{{[]int{50}, 4}, {[]int{90}, 3}, {[]int{30, 30, 30}, 3}} {
		dist, err := shufflesharding.OverlapDistribution(c.zones, c.size)
		if err != nil {
			panic(err)
		}
		fmt.Printf("zones %v size %d:", c.zones, c.size)
		for _, p := range dist {
			fmt.Printf(" %.5g%%", 100*p)
		}
		fmt.Println()
	}
	// Output:
	// zones [50] size 4: 70.858% 26.366% 2.6965% 0.079896% 0.00043422%
	// zones [90] size 3: 90.224% 9.5531% 0.22217% 0.00085121%
	// zones [30 30 30] size 3: 90.33% 9.3444% 0.32222% 0.0037037%
}

func pickerExampleNames(ms []shufflesharding.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}
