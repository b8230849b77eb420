package fleet

import (
	"errors"
	"fmt"
	"math"

	"github.com/fairslice/fairslice/seats"
)

// MaxTopFlows bounds Summary.Flows: a replica reports at most its 16
// heaviest flows, which keeps a summary under 4 KB.
const MaxTopFlows = 16

// Summary is what one replica publishes every period.
type Summary struct {
	// Replica names the publisher; unique in the fleet.
	Replica string `json:"replica"`
	// Period counts the publisher's own periods. Readers compare it only
	// with the same replica's earlier periods (never with a clock), so
	// clock skew between replicas does not matter.
	Period uint64 `json:"period"`
	// ServerConcurrencyLimit is the publisher's server limit in seats.
	ServerConcurrencyLimit int `json:"serverConcurrencyLimit"`
	// Levels are its priority levels: their limits and seat demand.
	Levels []LevelDemand `json:"levels,omitempty"`
	// Flows are its heaviest flows by seat-seconds (at most MaxTopFlows).
	Flows []FlowDemand `json:"flows,omitempty"`
}

// LevelDemand is one priority level on one replica: the statistics
// borrowing keeps (seats.BorrowingLevel).
type LevelDemand struct {
	Name      string            `json:"name"`
	Limits    seats.LevelLimits `json:"limits"`
	Demand    seats.SeatDemand  `json:"demand"`
	CurrentCL int               `json:"currentCL"`
}

// FlowDemand is one flow on one replica over the last period.
type FlowDemand struct {
	// Level and Flow identify it (Flow: FlowSchema and distinguisher, as
	// the replica's caller names flows).
	Level string `json:"level"`
	Flow  string `json:"flow"`
	// Seats is the mean seats it held (seat-seconds over the period).
	Seats float64 `json:"seats"`
	// Demand is the mean seats it asked for: the seats its requests held
	// waiting or executing (at least Seats), plus the seats of its
	// requests refused, each for the flow's mean execution time.
	Demand float64 `json:"demand"`
}

// Validate reports every problem of s at once.
func (s *Summary) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("fleet: "+format, args...)) }
	if s.Replica == "" {
		bad("Summary.Replica is empty")
	}
	if s.ServerConcurrencyLimit < 0 {
		bad("Summary.ServerConcurrencyLimit=%d must not be negative", s.ServerConcurrencyLimit)
	}
	if len(s.Flows) > MaxTopFlows {
		bad("Summary.Flows has %d flows, want at most %d", len(s.Flows), MaxTopFlows)
	}
	for i, f := range s.Flows {
		if !finite(f.Seats) || !finite(f.Demand) {
			bad("Summary.Flows[%d] (%q) Seats=%v, Demand=%v: want finite and not negative", i, f.Flow, f.Seats, f.Demand)
		}
	}
	for i, l := range s.Levels {
		if l.Name == "" {
			bad("Summary.Levels[%d].Name is empty", i)
		}
	}
	return errors.Join(errs...)
}

func finite(x float64) bool { return x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
