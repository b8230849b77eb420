package propagation

import (
	"strconv"

	"github.com/fairslice/fairslice/slicer"
)

// EndpointsObject is a core/v1 Endpoints object, the one-object-per-Service
// predecessor of EndpointSlices.
type EndpointsObject struct {
	Name, Namespace     string
	Labels, Annotations map[string]string
	Subsets             []Subset
}

// Subset is an EndpointSubset: addresses that share ports.
type Subset struct {
	Addresses, NotReadyAddresses []Address
	Ports                        []slicer.Port
}

// Address is an EndpointAddress. Empty strings and a zero TargetRef are
// unset.
type Address struct {
	IP, Hostname, NodeName string
	TargetRef              slicer.ObjectRef
}

// EndpointsSize returns the size of e with the stored metadata st, modelled
// like EndpointSliceSize.
func EndpointsSize(e EndpointsObject, st Stored) Size {
	var subsets elems
	for _, s := range e.Subsets {
		var ready, notReady elems
		for _, a := range s.Addresses {
			ready.add(addressSize(a))
		}
		for _, a := range s.NotReadyAddresses {
			notReady.add(addressSize(a))
		}
		subsets.add(subsetFrom(ready, notReady, s.Ports))
	}
	return endpointsFrom(e, st, subsets)
}

func endpointsFrom(e EndpointsObject, st Stored, subsets elems) Size {
	meta := objectMeta(e.Name, "", e.Namespace, e.Labels, e.Annotations, nil, st)
	pb := field(meta.Protobuf) + subsets.pb
	var o jsonObject
	o.member("kind", jstr("Endpoints"))
	o.member("apiVersion", jstr("v1"))
	o.member("metadata", meta.JSON)
	if subsets.n > 0 {
		o.member("subsets", subsets.jsonArray())
	}
	return Size{Protobuf: envelope(pb, "v1", "Endpoints"), JSON: o.size()}
}

// subsetFrom sizes a subset from the summed sizes of its addresses.
func subsetFrom(ready, notReady elems, ports []slicer.Port) Size {
	var ps elems
	for _, p := range ports {
		ps.add(endpointsPortSize(p))
	}
	var o jsonObject
	if ready.n > 0 {
		o.member("addresses", ready.jsonArray())
	}
	if notReady.n > 0 {
		o.member("notReadyAddresses", notReady.jsonArray())
	}
	if ps.n > 0 {
		o.member("ports", ps.jsonArray())
	}
	return Size{ready.pb + notReady.pb + ps.pb, o.size()}
}

func addressSize(a Address) Size {
	pb := str(a.IP) + str(a.Hostname)
	var o jsonObject
	o.member("ip", jstr(a.IP))
	o.optString("hostname", a.Hostname)
	if a.NodeName != "" {
		pb += str(a.NodeName)
		o.member("nodeName", jstr(a.NodeName))
	}
	if !a.TargetRef.IsZero() {
		r := objectRefSize(a.TargetRef)
		pb += field(r.Protobuf)
		o.member("targetRef", r.JSON)
	}
	return Size{pb, o.size()}
}

func endpointsPortSize(p slicer.Port) Size {
	pb := str(p.Name) + 1 + varint(uint64(p.Port)) + str(p.Protocol)
	var o jsonObject
	o.optString("name", p.Name)
	o.member("port", len(strconv.Itoa(int(p.Port))))
	o.optString("protocol", p.Protocol)
	if p.AppProtocol != "" {
		pb += str(p.AppProtocol)
		o.member("appProtocol", jstr(p.AppProtocol))
	}
	return Size{pb, o.size()}
}
