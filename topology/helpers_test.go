package topology

import (
	"fmt"
	"strings"
)

// ep builds an endpoint from a compact spec "ZONE STATE [>HINTS]": ZONE is a
// zone name ("" for none), STATE is + (ready), - (not ready) or ? (Ready
// unset), and HINTS a comma-separated list of zones ("" after > gives empty
// hints). Addresses are taken from addr.
func ep(addr, spec string) Endpoint {
	e := Endpoint{Addresses: []string{addr}}
	main, hints, hinted := strings.Cut(spec, ">")
	state := main[len(main)-1]
	e.Zone = main[:len(main)-1]
	switch state {
	case '+':
		e.Conditions.Ready = True
	case '-':
		e.Conditions.Ready = False
	case '?':
	default:
		panic("bad spec " + spec)
	}
	if hinted {
		e.Hints = &Hints{}
		if hints != "" {
			e.Hints.ForZones = strings.Split(hints, ",")
		}
	}
	return e
}

// slice builds a slice named name whose endpoints have addresses
// name-0, name-1, ...
func slice(name string, specs ...string) *Slice {
	s := &Slice{Name: name}
	for i, spec := range specs {
		s.Endpoints = append(s.Endpoints, ep(fmt.Sprintf("%s-%d", name, i), spec))
	}
	return s
}

// render writes a slice back in the spec notation, hints included, to
// compare plans with cmp.Diff.
func render(slices []*Slice) []string {
	var out []string
	for _, s := range slices {
		var b strings.Builder
		b.WriteString(s.Name + ":")
		for _, e := range s.Endpoints {
			st := map[Condition]string{True: "+", False: "-", Unset: "?"}[e.Conditions.Ready]
			b.WriteString(" " + e.Zone + st)
			if e.Hints != nil {
				b.WriteString(">" + strings.Join(e.Hints.ForZones, ","))
				if len(e.Hints.ForNodes) > 0 {
					b.WriteString("@" + strings.Join(e.Hints.ForNodes, ","))
				}
			}
		}
		out = append(out, b.String())
	}
	return out
}

// capacityOf builds a capacity from "zone=millis" pairs.
func capacityOf(pairs ...string) Capacity {
	m := map[string]int64{}
	for _, p := range pairs {
		var z string
		var v int64
		k, val, _ := strings.Cut(p, "=")
		z = k
		fmt.Sscan(val, &v)
		m[z] = v
	}
	c, err := CapacityFromZones(m)
	if err != nil {
		panic(err)
	}
	return c
}
