package topology

import (
	"fmt"
	"slices"
)

// Node is a cluster node as zone capacity reads it.
type Node struct {
	Name string
	// Zone is the topology.kubernetes.io/zone label, "" when missing.
	Zone string
	// MilliCPU is the node's allocatable CPU in millicores, rounded up as
	// resource.Quantity.MilliValue does. Zero or negative CPU counts as missing.
	MilliCPU int64
	// Ready is whether the node's Ready condition is True.
	Ready bool
	// ControlPlane is whether the node carries the
	// node-role.kubernetes.io/control-plane or node-role.kubernetes.io/master
	// label (with any value).
	ControlPlane bool
}

// Capacity is the share of allocatable CPU of each zone, which Auto mode
// uses as the share of traffic each zone originates. Build it with
// NewCapacity; the zero Capacity is insufficient.
type Capacity struct {
	zones []string // sorted
	milli []int64
	ratio []float64
	ok    bool
	// badNode names the first node that made the node information
	// insufficient, if one did.
	badNode string
}

// NewCapacity sums the allocatable CPU of the ready nodes that are not
// control-plane nodes, per zone, as upstream's TopologyCache.SetNodes does.
// A single counted node without a zone or with zero CPU makes the whole
// information insufficient, and so does a total of zero CPU or fewer than
// two zones; Auto hints are then off with reason InsufficientNodeInfo.
// O(nodes + zones log zones).
func NewCapacity(nodes []Node) Capacity {
	var c Capacity
	idx := map[string]int{}
	total := int64(0)
	for i := range nodes {
		n := &nodes[i]
		if n.ControlPlane || !n.Ready {
			continue
		}
		if n.Zone == "" || n.MilliCPU <= 0 {
			return Capacity{badNode: n.Name}
		}
		total += n.MilliCPU
		j, seen := idx[n.Zone]
		if !seen {
			j = len(c.zones)
			idx[n.Zone] = j
			c.zones = append(c.zones, n.Zone)
			c.milli = append(c.milli, 0)
		}
		c.milli[j] += n.MilliCPU
	}
	if total == 0 || len(c.zones) < 2 {
		return Capacity{}
	}
	return newCapacity(c.zones, c.milli)
}

// CapacityFromZones builds a Capacity directly from allocatable millicores
// per zone (no node filtering). Zones with zero CPU are kept, as upstream
// keeps a zone whose nodes sum to zero; fewer than two zones or a total of
// zero gives an insufficient Capacity. Negative CPU is an error.
func CapacityFromZones(milliCPU map[string]int64) (Capacity, error) {
	zones := make([]string, 0, len(milliCPU))
	for z, m := range milliCPU {
		if m < 0 {
			return Capacity{}, fmt.Errorf("topology: zone %q: negative CPU %dm", z, m)
		}
		if z == "" {
			return Capacity{}, fmt.Errorf("topology: empty zone name")
		}
		zones = append(zones, z)
	}
	slices.Sort(zones)
	milli := make([]int64, len(zones))
	total := int64(0)
	for i, z := range zones {
		milli[i] = milliCPU[z]
		total += milli[i]
	}
	if total == 0 || len(zones) < 2 {
		return Capacity{}, nil
	}
	return newCapacity(zones, milli), nil
}

func newCapacity(zones []string, milli []int64) Capacity {
	order := make([]int, len(zones))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case zones[a] < zones[b]:
			return -1
		case zones[a] > zones[b]:
			return 1
		}
		return 0
	})
	c := Capacity{ok: true, zones: make([]string, len(zones)), milli: make([]int64, len(zones)), ratio: make([]float64, len(zones))}
	total := int64(0)
	for _, m := range milli {
		total += m
	}
	for i, j := range order {
		c.zones[i] = zones[j]
		c.milli[i] = milli[j]
		c.ratio[i] = float64(milli[j]) / float64(total)
	}
	return c
}

// Sufficient reports whether the node information allows Auto hints.
func (c Capacity) Sufficient() bool { return c.ok }

// InsufficientNode returns the name of the first counted node that lacked a
// zone or CPU, when that is why c is insufficient, and "" otherwise.
func (c Capacity) InsufficientNode() string { return c.badNode }

// Zones returns the zone names in sorted order (nil when insufficient).
func (c Capacity) Zones() []string { return slices.Clone(c.zones) }

// Ratio returns zone's share of allocatable CPU, and 0 for an unknown zone.
func (c Capacity) Ratio(zone string) float64 {
	if i := c.index(zone); i >= 0 {
		return c.ratio[i]
	}
	return 0
}

// MilliCPU returns zone's allocatable millicores, and 0 for an unknown zone.
func (c Capacity) MilliCPU(zone string) int64 {
	if i := c.index(zone); i >= 0 {
		return c.milli[i]
	}
	return 0
}

// index finds zone among c's zones by a linear scan, which beats a map for
// the handful of zones a cluster has.
func (c Capacity) index(zone string) int {
	for i, z := range c.zones {
		if z == zone {
			return i
		}
	}
	return -1
}
