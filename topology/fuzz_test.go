package topology

import (
	"fmt"
	"testing"
)

// FuzzAddHints decodes a cluster and a plan from bytes (zones and their
// CPU, endpoints with zone, readiness and existing hints, split into slices
// to create, update and leave unchanged) and runs every allocator, the
// traffic distributions, removal and endpoint selection on it: nothing may
// panic, unchanged slices are never modified, and with hints on every ready
// endpoint has a hint.
func FuzzAddHints(f *testing.F) {
	f.Add([]byte{3, 10, 10, 10, 0, 11, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2})
	f.Add([]byte{2, 0, 5, 1, 40, 7, 7, 7, 200, 201, 255, 0, 1, 130, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return int(b)
		}
		nz := next() % 7
		cpu := map[string]int64{}
		for i := range nz {
			cpu[fmt.Sprintf("z%d", i)] = int64(next())
		}
		c, err := CapacityFromZones(cpu)
		if err != nil {
			return
		}
		zone := func(b int) string {
			switch {
			case b%11 == 10:
				return ""
			case b%11 == 9:
				return "elsewhere"
			}
			return fmt.Sprintf("z%d", b%max(nz, 1))
		}
		si := &SliceInfo{AddressType: "IPv4"}
		for k := 0; len(data) > 0 && k < 20; k++ {
			s := &Slice{Name: fmt.Sprint("s", k)}
			for range next() % 12 {
				b := next()
				e := Endpoint{Addresses: []string{fmt.Sprint("10.0.", k, ".", len(s.Endpoints))}, Zone: zone(b)}
				e.Conditions.Ready = []Condition{True, True, False, Unset}[b%4]
				switch h := next(); h % 5 {
				case 1:
					e.Hints = &Hints{ForZones: []string{zone(h / 5)}}
				case 2:
					e.Hints = &Hints{ForZones: []string{zone(h / 5), zone(h/5 + 1)}}
				case 3:
					e.Hints = &Hints{}
				}
				s.Endpoints = append(s.Endpoints, e)
			}
			switch next() % 3 {
			case 0:
				si.ToCreate = append(si.ToCreate, s)
			case 1:
				si.ToUpdate = append(si.ToUpdate, s)
			default:
				si.Unchanged = append(si.Unchanged, s)
			}
		}
		for _, opts := range []Options{{}, {Allocator: AllocatorMinCrossZone}, {Allocator: AllocatorMinCrossZone, HadHints: true, Hysteresis: 0.1}} {
			for _, p := range []Policy{PolicyAuto, PolicyPreferClose, PolicyPreferSameNode, PolicyNone} {
				run := cloneInfo(si)
				before := render(run.Unchanged)
				orig := append([]*Slice(nil), run.Unchanged...)
				r := Apply(c, run, p, opts)
				if got := render(orig); fmt.Sprint(got) != fmt.Sprint(before) {
					t.Fatalf("policy %v: an unchanged slice was modified", p)
				}
				if p == PolicyAuto && r.Enabled() && opts.Allocator == AllocatorMinCrossZone {
					for _, s := range allSlices(run) {
						for _, e := range s.Endpoints {
							if isReady(&e) && (e.Hints == nil || len(e.Hints.ForZones) == 0) {
								t.Fatalf("ready endpoint %s without hints", address(&e))
							}
						}
					}
				}
				var eps []Endpoint
				for _, s := range allSlices(run) {
					eps = append(eps, s.Endpoints...)
				}
				SelectEndpoints(eps, TrafficPolicy{ExternalLocal: true, External: true}, "n", "z0")
				Evaluate(c, allSlices(run))
			}
		}
	})
}
