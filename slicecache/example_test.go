package slicecache_test

import (
	"fmt"

	"github.com/fairslice/fairslice/slicecache"
	"github.com/fairslice/fairslice/slicer"
)

func webSlice(name, rv string, eps ...slicer.Endpoint) *slicecache.Slice {
	return &slicecache.Slice{ResourceVersion: rv, Slice: slicer.Slice{
		Name: name, Namespace: "default", AddressType: slicer.IPv4,
		Labels:    map[string]string{slicer.LabelServiceName: "web"},
		Ports:     []slicer.Port{{Name: "http", Port: 8080, Protocol: "TCP"}},
		Endpoints: eps,
	}}
}

func pod(addr string, ready, terminating bool) slicer.Endpoint {
	return slicer.Endpoint{Addresses: []string{addr}, NodeName: "node-a",
		Conditions: slicer.Conditions{Ready: slicer.TristateOf(ready), Serving: slicer.True, Terminating: slicer.TristateOf(terminating)}}
}

// An endpoint moves between two slices of a Service: for a moment it is in
// both, terminating in the old one. The cache keeps the non-terminating
// copy, and reports only what changed.
func Example() {
	c, _ := slicecache.New(slicecache.Options{NodeName: "node-a"})
	c.Update(webSlice("web-abc12", "1", pod("10.0.0.1", true, false), pod("10.0.0.2", false, true)))
	c.Update(webSlice("web-def34", "2", pod("10.0.0.2", true, false)))
	for _, ch := range c.Checkout() {
		for _, p := range ch.Ports {
			fmt.Println(ch.Service, p.Port.Name, "added", len(p.Added))
		}
	}
	web, http := slicecache.ServiceName{Namespace: "default", Name: "web"}, slicecache.PortName{Name: "http", Protocol: "TCP"}
	for _, e := range c.Endpoints(web, http) {
		fmt.Printf("%s:%d ready=%v local=%v\n", e.Address, e.Port, e.Ready, e.Local)
	}

	// 10.0.0.1 stops being ready.
	c.Update(webSlice("web-abc12", "3", pod("10.0.0.1", false, false), pod("10.0.0.2", false, true)))
	for _, ch := range c.Checkout() {
		for _, p := range ch.Ports {
			for _, e := range p.Updated {
				fmt.Printf("updated %s ready=%v\n", e.Address, e.Ready)
			}
		}
	}
	// Output:
	// default/web http added 2
	// 10.0.0.1:8080 ready=true local=true
	// 10.0.0.2:8080 ready=true local=true
	// updated 10.0.0.1 ready=false
}
