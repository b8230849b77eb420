//lint:file-ignore SA1019 the mirroring controller exists to read the deprecated core/v1 Endpoints API

package endpointslice

// Endpoints → slicer.Endpoints: the mirroring controller's input.

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/fairslice/fairslice/slicer"
)

// EndpointsFromAPI converts a core/v1 Endpoints object to the slicer's
// input for Mirror. Nil gives the zero Endpoints.
func EndpointsFromAPI(ep *corev1.Endpoints) slicer.Endpoints {
	if ep == nil {
		return slicer.Endpoints{}
	}
	out := slicer.Endpoints{
		Namespace: ep.Namespace, Name: ep.Name, UID: string(ep.UID),
		Labels: ep.Labels, Annotations: ep.Annotations,
		Subsets:  make([]slicer.EndpointsSubset, len(ep.Subsets)),
		Deleting: ep.DeletionTimestamp != nil,
	}
	for i, ss := range ep.Subsets {
		sub := slicer.EndpointsSubset{
			Addresses:         endpointsAddresses(ss.Addresses),
			NotReadyAddresses: endpointsAddresses(ss.NotReadyAddresses),
			Ports:             make([]slicer.Port, len(ss.Ports)),
		}
		for j, p := range ss.Ports {
			sub.Ports[j] = slicer.Port{Name: p.Name, Port: p.Port, Protocol: string(p.Protocol), AppProtocol: deref(p.AppProtocol)}
		}
		out.Subsets[i] = sub
	}
	return out
}

func endpointsAddresses(in []corev1.EndpointAddress) []slicer.EndpointsAddress {
	if in == nil {
		return nil
	}
	out := make([]slicer.EndpointsAddress, len(in))
	for i, a := range in {
		out[i] = slicer.EndpointsAddress{IP: a.IP, Hostname: a.Hostname, NodeName: deref(a.NodeName)}
		if r := a.TargetRef; r != nil {
			out[i].TargetRef = slicer.ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: string(r.UID),
				APIVersion: r.APIVersion, ResourceVersion: r.ResourceVersion, FieldPath: r.FieldPath}
		}
	}
	return out
}
