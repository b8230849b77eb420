package topology

import "math"

// The overload minimum of a zone is the fewest hinted endpoints that keep
// each of them within the overload threshold of its fair load:
// ceil(share × n / (1+threshold)), share being the zone's CPU fraction and n
// the ready endpoints. It is computed here only, in two forms: upstream's
// float64 expression (Allocate, Overloaded), and the exact one
// (AllocatorMinCrossZone).

// overloadMinimum is the overload minimum of a zone whose fair share is
// desired endpoints: the fewest that keep each within OverloadThreshold of
// its fair load, ceil(desired / 1.2), in upstream's float64 expression
// (which can be one too high when the quotient is an integer). Allocate and
// Overloaded use it; AllocatorMinCrossZone uses the exact minimums instead.
func overloadMinimum(desired float64) int {
	return int(math.Ceil(desired * (1 / (1 + OverloadThreshold))))
}

// minimums returns the exact overload minimum of each capacity zone for n
// ready endpoints and the given threshold. Unlike overloadMinimum, an
// integer quotient is not pushed up by float rounding: for example 18
// endpoints over 3 equal zones need 5 each, where upstream's expression
// gives 6.
func minimums(c Capacity, n int, threshold float64) []int {
	total := int64(0)
	for _, m := range c.milli {
		total += m
	}
	out := make([]int, len(c.zones))
	for i, m := range c.milli {
		out[i] = exactMinimum(m, total, n, threshold)
	}
	return out
}

// exactMinimum is the overload minimum of a zone of m millicores out of
// total, for n ready endpoints.
func exactMinimum(m, total int64, n int, threshold float64) int {
	if threshold == OverloadThreshold && m <= math.MaxInt64/5/max(int64(n), 1) {
		// ceil(m·n / (1.2·total)) = ceil(5·m·n / (6·total)), in integers
		// while they fit.
		num, den := 5*m*int64(n), 6*total
		return int((num + den - 1) / den)
	}
	return int(math.Ceil(float64(m)*float64(n)/(float64(total)*(1+threshold)) - 1e-9))
}
