package backendsim

// SweepStatic runs cfg with a static total (Adaptive nil) at each of
// totals and returns the results in the same order, and the index of the
// one with the highest goodput (the first of equals).
func SweepStatic(cfg Config, totals []int) (results []Result, best int, err error) {
	cfg.Adaptive = nil
	for i, total := range totals {
		cfg.Static = total
		r, err := Run(cfg)
		if err != nil {
			return nil, 0, err
		}
		results = append(results, r)
		if r.Goodput > results[best].Goodput {
			best = i
		}
	}
	return results, best, nil
}
