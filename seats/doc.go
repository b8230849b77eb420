// Package seats divides a server's concurrency among the priority levels
// of API Priority and Fairness: the static limits each level's shares give
// it, the periodic borrowing that moves seats to the levels with demand,
// and the plan that puts both together with decisions made beyond
// upstream. Everything here is a pure function of explicit inputs.
//
// # Model
//
// A server has a total of seats (kube-apiserver's --max-requests-inflight
// plus --max-mutating-requests-inflight). ComputeLimits gives each level
// its static limits from its nominalConcurrencyShares, lendablePercent and
// borrowingLimitPercent: nominal = ceil(total · shares / Σ shares), the
// seats it may lend and borrow, the bounds [MinCL, MaxCL] its current
// limit stays within, and the most seats one request may take (MaxSeats).
// Every period (BorrowingPeriod, 10 s) upstream folds each level's seat
// demand into its statistics (SeatDemand.Update) and re-divides the
// levels' nominal sum among them by demand (Borrow, with FairAllocation
// in its fair regime).
//
// Compute is the one computation a server runs: from the total, every
// level's configuration, demand and limit in force, and optional
// overrides (current limits decided beyond upstream, such as a fleet's),
// it returns a Plan: each level's static limits, the borrowing's limit
// (Allocation.CurrentCL) and the limit to put in force (Current, the
// override within the level's bounds where there is one). Package apf
// applies a Plan in one place; see its doc, "Where seats are decided".
//
// # Failure modes
//
// Shares that sum to 0 or a level that is neither Limited nor Exempt make
// ComputeLimits fail; Compute then keeps each level's Previous limits and
// says so in Plan.Err. A fair allocation that fails (bounds that cannot
// be met) keeps the levels' limits in force, as upstream; Plan.Err says so
// too. The rounding up of nominal limits makes their sum a little more
// than the total (602 at 600 with the default configuration; every level
// with shares gets at least one seat).
//
// # Mapping to Kubernetes
//
// k8s.io/apiserver's flowcontrol package: the static limits are
// finishQueueSetReconfigsLocked and max_seats.go, the borrowing
// updateBorrowingLocked, seatDemandStats and conc_alloc.go. The results
// are compared with upstream's over random configurations and demands in
// the kube/verify module.
//
// # Deliberate differences
//
//   - BorrowingOptions.SubtractExemptUsage is an opt-in fix: upstream lets
//     the non-exempt levels share all of Σ NominalCL even while exempt
//     requests use seats, so the limits add up to more than the server by
//     what exempt uses. The zero BorrowingOptions is upstream's.
//   - Overrides in Compute's Input are beyond upstream; without them a
//     Plan is upstream's borrowing, decision for decision.
package seats
