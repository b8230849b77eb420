package pictures_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/fairslice/fairslice/fairqueue/scenario"
	"github.com/fairslice/fairslice/kube/tools/pictures"
)

func ExamplePodSweep() {
	fmt.Println(pictures.PodSweep(20000))
	// Output: [1 2 5 10 20 50 100 200 500 1000 2000 5000 10000 20000]
}

// A simulation picture, and the numbers read back from its SVG.
func ExampleSimulation() {
	s, err := scenario.Parse(strings.NewReader(`{"config": {"queues": 4, "handSize": 1, "queueLengthLimit": 1, "concurrencyLimit": 1},
	 "requests": [{"id": "a", "arrival": "0s", "hash": 1, "duration": "1s"},
	              {"id": "b", "arrival": "0s", "hash": 1, "duration": "1s"},
	              {"id": "c", "arrival": "0s", "hash": 1, "duration": "1s"}]}`))
	if err != nil {
		panic(err)
	}
	results, err := scenario.Run(s, scenario.NewEngine())
	if err != nil {
		panic(err)
	}
	fig := pictures.Simulation("three requests, one seat", pictures.NewSimulationRun("fairslice", s, results))
	var svg bytes.Buffer
	if err := fig.WriteSVG(&svg); err != nil {
		panic(err)
	}
	var data pictures.SimulationData
	if err := pictures.ReadData(&svg, &data); err != nil {
		panic(err)
	}
	f := data.Runs[0].Flows[0]
	fmt.Println("waiting:", f.Waiting)
	fmt.Println("executing:", f.Executing)
	fmt.Println("dispatches:", f.Dispatches, "rejections:", f.Rejections)
	// Output:
	// waiting: [{0 1} {1 0} {2 0}]
	// executing: [{0 1} {1 1} {2 0}]
	// dispatches: [0 1] rejections: [{0 queue-full}]
}
