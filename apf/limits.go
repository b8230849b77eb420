package apf

// Limits are a priority level's concurrency limits, in seats, and the state
// of its borrowing (upstream's nominal_limit_seats, lower_limit_seats,
// upper_limit_seats, current_limit_seats, target_seats, seat_fair_frac and
// demand_seats_* metrics).
type Limits struct {
	// Nominal is the level's share of the server concurrency limit.
	Nominal int
	// Lendable and Borrowing are the seats it may lend and borrow.
	Lendable, Borrowing int
	// Lower (Nominal − Lendable) and Upper (Nominal + Borrowing) bound
	// Current.
	Lower, Upper int
	// Current is the concurrency limit in effect: Borrowed, or what
	// Options.SeatPolicy decided for the level.
	Current int
	// Borrowed is the current limit the borrowing adjustment decided,
	// before Options.SeatPolicy; without a policy it is Current.
	Borrowed int
	// MaxSeats is the most seats one request may take (0 for levels that
	// do not queue: the estimator's global limit applies).
	MaxSeats uint64

	// Target is the allocation the adjustment aimed at and FairFrac the
	// fair proportion it found (0 in the first two regimes).
	Target, FairFrac float64
	// ConcurrencyDenominator is what upstream divides seats and executing
	// requests by in its utilization metrics: Current, or when that is 0,
	// a tenth of the server concurrency limit (at least 1).
	ConcurrencyDenominator int
	// QueueCapacity is what upstream divides waiting requests by:
	// max(1, queue length limit) × queues (queues omitted when 0).
	QueueCapacity int
	// Queues and QueueLengthLimit are the level's queuing parameters (0
	// for a level that does not queue).
	Queues, QueueLengthLimit int

	// Demand statistics of the last adjustment period, in seats.
	DemandAverage, DemandStdDev, DemandHighWatermark, DemandSmoothed float64
}

// ServerConcurrencyLimit returns Options.ServerConcurrencyLimit.
func (c *Controller) ServerConcurrencyLimit() int { return c.serverCL }

// Limits returns every priority level's limits and demand statistics as
// of the last seat plan (quiescing levels included), by name: the
// periodic adjustment, a configuration change, Replan, and with
// Options.Adaptive every revision that moves the total (see Total).
// O(levels).
func (c *Controller) Limits() map[string]Limits {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Limits, len(c.levels))
	for name, lv := range c.levels {
		out[name] = lv.limits
	}
	return out
}
