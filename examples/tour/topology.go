package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/topology"
)

// topologySection reconciles kubernetes#122437's Service, 11 ready
// endpoints over three zones of equal CPU (4, 4 and 3 endpoints), with
// upstream's Auto allocation and with fairslice's options, and prints
// whether hints are on and where the traffic goes.
func topologySection(w io.Writer) error {
	c, err := topology.CapacityFromZones(map[string]int64{"zone-a": 4000, "zone-b": 4000, "zone-c": 4000})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "11 ready endpoints (zone-a 4, zone-b 4, zone-c 3), three zones of equal CPU.")
	fmt.Fprintln(w, "Cross-zone: expected share of requests served in another zone than they came from.")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "allocator\thints\tcross-zone\tmax overload\thints per zone / why off")
	for _, row := range []struct {
		name string
		opts topology.Options
	}{
		{"upstream (Auto)", topology.Options{}},
		{"fairslice min-cross-zone", topology.Options{Allocator: topology.AllocatorMinCrossZone}},
		{"min-cross-zone + hysteresis 0.1, had hints", topology.Options{Allocator: topology.AllocatorMinCrossZone, Hysteresis: 0.1, HadHints: true}},
	} {
		s := &slicer.Slice{Name: "web-x1", AddressType: slicer.IPv4}
		for i, n := range []int{4, 4, 3} {
			for k := range n {
				s.Endpoints = append(s.Endpoints, slicer.Endpoint{
					Addresses:  []string{fmt.Sprintf("10.0.%d.%d", i, k+1)},
					Zone:       fmt.Sprintf("zone-%c", 'a'+i),
					Conditions: slicer.Conditions{Ready: slicer.True},
				})
			}
		}
		si := &topology.SliceInfo{AddressType: "IPv4", ToCreate: []*topology.Slice{s}}
		r := topology.AddHints(c, si, row.opts)
		q := topology.Evaluate(c, si.ToCreate)
		detail := r.Fallback.Message()
		if r.Enabled() {
			detail = hintGroups(s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f%%\t%.0f%%\t%s\n", row.name, onOff(r.Enabled()), 100*q.CrossZone, 100*q.MaxOverload, detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Upstream needs ceil(11/3/1.2) = 4 endpoints per zone, 12 in all, and turns hints off:")
	fmt.Fprintln(w, "every zone then spreads over all 11 endpoints. Min-cross-zone hints zone-a and zone-c")
	fmt.Fprintln(w, "for each other's 7 endpoints within the 20% threshold; with hysteresis a Service that")
	fmt.Fprintln(w, "had hints keeps single-zone hints up to 30% overload.")
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// hintGroups describes which zones' endpoints serve which zones.
func hintGroups(s *topology.Slice) string {
	count := map[string]int{}
	for _, e := range s.Endpoints {
		if e.Hints != nil {
			count[strings.Join(e.Hints.ForZones, "+")]++
		}
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, count[k]))
	}
	return strings.Join(parts, " ")
}
