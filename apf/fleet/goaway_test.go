package fleet

import (
	"testing"

	"github.com/fairslice/fairslice/flowschema"
)

func TestOverloaded(t *testing.T) {
	at := func(name string, seats int, demand float64) Summary {
		return Summary{Replica: name, Levels: []LevelDemand{{Name: gd, CurrentCL: seats, Demand: flowschema.SeatDemand{Average: demand}}}}
	}
	for _, c := range []struct {
		name  string
		own   Summary
		peers []Summary
		want  bool
	}{
		{"alone", at("r0", 10, 30), nil, false},
		{"busiest while a peer idles", at("r0", 10, 30), []Summary{at("r1", 10, 2), at("r2", 10, 10)}, true},
		{"busy but every peer full", at("r0", 10, 30), []Summary{at("r1", 10, 10), at("r2", 10, 12)}, false},
		{"a peer idles but not the busiest", at("r0", 10, 8), []Summary{at("r1", 10, 2), at("r2", 10, 30)}, false},
		{"no seats", at("r0", 0, 5), []Summary{at("r1", 10, 0)}, false},
	} {
		if got := Overloaded(c.own, c.peers); got != c.want {
			t.Errorf("%s: Overloaded = %v, want %v", c.name, got, c.want)
		}
	}
}
