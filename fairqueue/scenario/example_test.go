package scenario_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/fairslice/fairslice/fairqueue/scenario"
)

// Replay a scenario file through fairqueue and print one JSON line per
// request, as "fairslice simulate" does.
func Example() {
	const file = `{"config": {"queues": 8, "handSize": 2, "queueLengthLimit": 1, "concurrencyLimit": 1},
	 "requests": [
	  {"id": "A1", "arrival": "0s", "hash": 1001, "duration": "1s"},
	  {"id": "A2", "arrival": "0s", "hash": 1001, "duration": "1s"},
	  {"id": "B1", "arrival": "100ms", "hash": 2002, "duration": "1s", "waitLimit": "500ms"},
	  {"id": "A3", "arrival": "200ms", "hash": 1001, "duration": "1s"},
	  {"id": "A4", "arrival": "300ms", "hash": 1001, "duration": "1s"}]}`
	s, err := scenario.Parse(strings.NewReader(file))
	if err != nil {
		fmt.Println(err)
		return
	}
	results, err := scenario.Run(s, scenario.NewEngine())
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = scenario.WriteResults(os.Stdout, results)
	// Output:
	// {"id":"A1","outcome":"dispatched","reason":"","queue":1,"dispatchedAt":"0s"}
	// {"id":"A2","outcome":"dispatched","reason":"","queue":7,"dispatchedAt":"1s"}
	// {"id":"B1","outcome":"rejected","reason":"time-out","queue":2,"dispatchedAt":""}
	// {"id":"A3","outcome":"dispatched","reason":"","queue":1,"dispatchedAt":"2s"}
	// {"id":"A4","outcome":"rejected","reason":"queue-full","queue":-1,"dispatchedAt":""}
}

// Parse reports every problem of a file, naming the request and field.
func ExampleParse() {
	_, err := scenario.Parse(strings.NewReader(`{"config": {"queues": 8, "handSize": 2, "queueLengthLimit": 1, "concurrencyLimit": 1},
	 "requests": [{"id": "A1", "arrival": "-1s", "hash": -3, "duration": "1s"}]}`))
	fmt.Println(err)
	// Output:
	// scenario: requests[0] (id "A1"): arrival: negative duration "-1s"
	// scenario: requests[0] (id "A1"): hash: must be an unsigned 64-bit integer literal or a string holding one in decimal or 0x-hexadecimal, got -3
}
