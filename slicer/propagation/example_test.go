package propagation_test

import (
	"fmt"

	"github.com/fairslice/fairslice/slicer/propagation"
)

// KEP-0752's large case: a rolling update of 20,000 pods watched by 5,000
// nodes.
func ExampleSimulate() {
	r, err := propagation.Simulate(propagation.Config{Pods: 20000, Nodes: 5000})
	if err != nil {
		panic(err)
	}
	for _, d := range r.Designs {
		sent, _ := r.Sent(d.RollingBytes)
		fmt.Printf("%-14s object %7d B, rolling update sends %.3g TB\n", d.Name, d.ObjectSize.Protobuf, sent/1e12)
	}
	fmt.Println("Endpoints passes etcd's 1.5 MiB limit at", r.EtcdLimitPods.Protobuf, "pods")
	// Output:
	// Endpoints      object 2209036 B, rolling update sends 220 TB
	// 100 per slice  object   12816 B, rolling update sends 1.28 TB
	// 1 per slice    object     540 B, rolling update sends 0.054 TB
	// Endpoints passes etcd's 1.5 MiB limit at 14377 pods
}
