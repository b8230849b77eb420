package fleet

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

func TestMaxMinFair(t *testing.T) {
	all := []int(nil)
	tests := []struct {
		name     string
		capacity []float64
		demands  []Demand
		want     []float64
	}{
		{"one replica, equal split", []float64{10}, []Demand{{100, all}, {100, all}}, []float64{5, 5}},
		{"light flow keeps its demand", []float64{10}, []Demand{{1, all}, {100, all}, {100, all}}, []float64{1, 4.5, 4.5}},
		{"nothing demanded", []float64{10, 10}, []Demand{{0, all}}, []float64{0}},
		// One spread and three pinned heavy flows on three replicas:
		// every flow gets a quarter of the fleet.
		{"spread and pinned", []float64{10, 10, 10},
			[]Demand{{100, all}, {100, []int{0}}, {100, []int{1}}, {100, []int{2}}},
			[]float64{7.5, 7.5, 7.5, 7.5}},
		// Two flows pinned to replica 0 share it; the spread flow takes
		// the rest of the fleet.
		{"pinned to one replica", []float64{10, 10, 10},
			[]Demand{{100, all}, {100, []int{0}}, {100, []int{0}}},
			[]float64{20, 5, 5}},
		// A small pinned flow leaves the rest of its replica to the others.
		{"small pinned flow", []float64{10, 10},
			[]Demand{{2, []int{0}}, {100, all}, {100, []int{1}}},
			[]float64{2, 9, 9}},
		{"empty replica", []float64{0, 10}, []Demand{{5, []int{0}}, {5, all}}, []float64{0, 5}},
		{"no flows", []float64{1}, nil, []float64{}},
	}
	for _, tt := range tests {
		got, err := MaxMinFair(tt.capacity, tt.demands)
		if err != nil {
			t.Fatalf("%s: MaxMinFair: %v", tt.name, err)
		}
		if d := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: MaxMinFair(%v, %v) (-want +got):\n%s", tt.name, tt.capacity, tt.demands, d)
		}
	}
}

func TestMaxMinFairRefusesBadInput(t *testing.T) {
	_, err := MaxMinFair([]float64{-1, math.NaN()}, []Demand{{Seats: math.Inf(1)}, {Seats: 1, Replicas: []int{2}}})
	if err == nil {
		t.Fatal("MaxMinFair(bad input) = nil error")
	}
	for _, want := range []string{"capacity[0]=-1", "capacity[1]=NaN", "demands[0].Seats=+Inf", "demands[1].Replicas has 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("MaxMinFair(bad input) error %q does not name %q", err, want)
		}
	}
	if _, err := MaxMinFair(make([]float64, MaxFairShareReplicas+1), nil); err == nil {
		t.Errorf("MaxMinFair(%d replicas) = nil error", MaxFairShareReplicas+1)
	}
}

// TestMaxMinFairIsLexOptimal checks MaxMinFair against the definition, by
// max-flow rather than by replica sets: the allocation can be served, no
// flow can rise alone, and no flow can rise by taking from one that has
// more (Fujishige's condition for the lexicographically optimal base).
func TestMaxMinFairIsLexOptimal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "replicas")
		capacity := make([]float64, n)
		for r := range capacity {
			capacity[r] = float64(rapid.IntRange(0, 8).Draw(t, "capacity"))
		}
		demands := make([]Demand, rapid.IntRange(1, 5).Draw(t, "flows"))
		for i := range demands {
			demands[i].Seats = float64(rapid.IntRange(0, 12).Draw(t, "seats"))
			for r := range n {
				if rapid.Bool().Draw(t, "lands") {
					demands[i].Replicas = append(demands[i].Replicas, r)
				}
			}
		}
		a, err := MaxMinFair(capacity, demands)
		if err != nil {
			t.Fatal(err)
		}
		const eps, gap = 1e-7, 1e-6
		if !servable(capacity, demands, a) {
			t.Fatalf("MaxMinFair(%v, %v) = %v, which cannot be served", capacity, demands, a)
		}
		for f := range a {
			if a[f] < -gap || a[f] > demands[f].Seats+gap {
				t.Fatalf("MaxMinFair(%v, %v) = %v: flow %d outside [0, demand]", capacity, demands, a, f)
			}
			if a[f] >= demands[f].Seats-gap {
				continue
			}
			if servable(capacity, demands, moved(a, f, -1, eps)) {
				t.Fatalf("MaxMinFair(%v, %v) = %v: flow %d can rise alone", capacity, demands, a, f)
			}
			for g := range a {
				if g != f && a[g] > a[f]+gap && servable(capacity, demands, moved(a, f, g, eps)) {
					t.Fatalf("MaxMinFair(%v, %v) = %v: flow %d can rise by taking from flow %d", capacity, demands, a, f, g)
				}
			}
		}
	})
}

// moved returns a with eps more for flow up and eps less for flow down
// (none if down < 0).
func moved(a []float64, up, down int, eps float64) []float64 {
	b := append([]float64(nil), a...)
	b[up] += eps
	if down >= 0 {
		b[down] -= eps
	}
	return b
}

// servable reports whether the replicas can serve allocation a, by an
// Edmonds-Karp max-flow from a source through flows and replicas to a sink.
func servable(capacity []float64, demands []Demand, a []float64) bool {
	nf, nr := len(a), len(capacity)
	src, sink := 0, 1+nf+nr
	c := make([][]float64, sink+1)
	for i := range c {
		c[i] = make([]float64, sink+1)
	}
	want := 0.0
	for f := range a {
		c[src][1+f] = a[f]
		want += a[f]
		lands := demands[f].Replicas
		if len(lands) == 0 {
			for r := range nr {
				lands = append(lands, r)
			}
		}
		for _, r := range lands {
			c[1+f][1+nf+r] = math.Inf(1)
		}
	}
	for r := range nr {
		c[1+nf+r][sink] = capacity[r]
	}
	got := 0.0
	for {
		prev := make([]int, len(c))
		for i := range prev {
			prev[i] = -1
		}
		prev[src] = src
		q := []int{src}
		for len(q) > 0 && prev[sink] < 0 {
			u := q[0]
			q = q[1:]
			for v := range c {
				if prev[v] < 0 && c[u][v] > 1e-12 {
					prev[v] = u
					q = append(q, v)
				}
			}
		}
		if prev[sink] < 0 {
			return got >= want-1e-9
		}
		push := math.Inf(1)
		for v := sink; v != src; v = prev[v] {
			push = min(push, c[prev[v]][v])
		}
		for v := sink; v != src; v = prev[v] {
			c[prev[v]][v] -= push
			c[v][prev[v]] += push
		}
		got += push
	}
}
