package topology

import (
	"errors"
	"fmt"
)

// ZoneRouting returns the probabilities with which a proxy in zone local
// sends a request to each zone under Envoy's zone-aware routing: given the
// share of clients (downstream) and of endpoints (upstream) in each zone,
// a zone with at least as large an endpoint share as its client share keeps
// everything local; otherwise it keeps upstream/downstream of its traffic
// local and spreads the rest over the zones with spare endpoints, in
// proportion to their residual share max(0, upstream − downstream).
//
// Shares are weights (normalised here) indexed by zone. When every zone's
// proxies route this way, each zone receives exactly its upstream share of
// all traffic, and the local fraction, Σ min(downstream, upstream), is the
// largest any routing with that property can keep local. Envoy's
// min_cluster_size and routing_enabled runtime knobs are not modelled.
// O(zones).
func ZoneRouting(local int, downstream, upstream []float64) ([]float64, error) {
	if len(downstream) != len(upstream) {
		return nil, fmt.Errorf("topology: ZoneRouting: %d downstream shares but %d upstream shares", len(downstream), len(upstream))
	}
	if local < 0 || local >= len(downstream) {
		return nil, fmt.Errorf("topology: ZoneRouting: local zone %d out of range [0,%d)", local, len(downstream))
	}
	d, err := normalise("downstream", downstream)
	if err != nil {
		return nil, err
	}
	u, err := normalise("upstream", upstream)
	if err != nil {
		return nil, err
	}
	p := make([]float64, len(d))
	if u[local] >= d[local] {
		p[local] = 1
		return p, nil
	}
	p[local] = u[local] / d[local]
	residual := 0.0
	for i := range u {
		if i != local && u[i] > d[i] {
			residual += u[i] - d[i]
		}
	}
	if residual == 0 {
		// Only rounding can leave nothing spare; stay local.
		p[local] = 1
		return p, nil
	}
	rest := 1 - p[local]
	for i := range u {
		if i != local && u[i] > d[i] {
			p[i] = rest * (u[i] - d[i]) / residual
		}
	}
	return p, nil
}

func normalise(name string, w []float64) ([]float64, error) {
	total := 0.0
	for i, x := range w {
		if !(x >= 0) || x > 1e300 {
			return nil, fmt.Errorf("topology: ZoneRouting: %s share of zone %d is %v, want a finite non-negative weight", name, i, x)
		}
		total += x
	}
	if total == 0 {
		return nil, errors.New("topology: ZoneRouting: " + name + " shares are all zero")
	}
	out := make([]float64, len(w))
	for i, x := range w {
		out[i] = x / total
	}
	return out, nil
}
