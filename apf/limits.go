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
	// Current is the concurrency limit in effect, set by the periodic
	// adjustment.
	Current int
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
