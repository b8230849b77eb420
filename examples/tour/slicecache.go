package main

import (
	"fmt"
	"io"

	"github.com/fairslice/fairslice/slicecache"
	"github.com/fairslice/fairslice/slicer"
)

// slicecacheSection moves one endpoint of a Service between two of its
// slices, as the controller does, and shows what a consumer of the slices
// sees at each checkout: the merged endpoints (the endpoint is in both
// slices for a moment, terminating in the old one) and only what changed.
func slicecacheSection(w io.Writer) error {
	c, err := slicecache.New(slicecache.Options{NodeName: "node-a"})
	if err != nil {
		return err
	}
	ep := func(addr string, terminating bool) slicer.Endpoint {
		return slicer.Endpoint{Addresses: []string{addr}, NodeName: "node-a",
			Conditions: slicer.Conditions{Ready: slicer.TristateOf(!terminating), Serving: slicer.True, Terminating: slicer.TristateOf(terminating)}}
	}
	slice := func(name, rv string, eps ...slicer.Endpoint) *slicecache.Slice {
		return &slicecache.Slice{ResourceVersion: rv, Slice: slicer.Slice{Name: name, Namespace: "default",
			AddressType: slicer.IPv4, Labels: map[string]string{slicer.LabelServiceName: "web"},
			Ports: []slicer.Port{{Name: "http", Port: 8080, Protocol: "TCP"}}, Endpoints: eps}}
	}
	steps := []struct {
		what  string
		slice *slicecache.Slice
	}{
		{"web-a holds 10.0.0.1 and 10.0.0.2", slice("web-a", "1", ep("10.0.0.1", false), ep("10.0.0.2", false))},
		{"10.0.0.2 appears in web-b; web-a still has it, terminating", slice("web-b", "2", ep("10.0.0.2", false))},
		{"", slice("web-a", "3", ep("10.0.0.1", false), ep("10.0.0.2", true))},
		{"web-a drops it", slice("web-a", "4", ep("10.0.0.1", false))},
	}
	web := slicecache.ServiceName{Namespace: "default", Name: "web"}
	http := slicecache.PortName{Name: "http", Protocol: "TCP"}
	for _, s := range steps {
		c.Update(s.slice)
		if s.what == "" {
			continue // checked out with the next step
		}
		for _, ch := range c.Checkout() {
			n := 0
			for _, p := range ch.Ports {
				n += len(p.Added) + len(p.Updated) + len(p.Removed)
			}
			fmt.Fprintf(w, "%-60s -> %s changed, %d endpoints changed;", s.what, ch.Service, n)
		}
		for _, e := range c.Endpoints(web, http) {
			fmt.Fprintf(w, " %s ready=%v", e.Address, e.Ready)
		}
		fmt.Fprintln(w)
	}
	return nil
}
