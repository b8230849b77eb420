package adapter

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fairslice/fairslice/slicer"
)

// Objects returns the discovery/v1 objects to send with client-go for
// plan: creates (named by the API server from GenerateName), updates and
// deletes. An update starts from a deep copy of the existing object of the
// same name, so it keeps its resourceVersion (for optimistic concurrency)
// and other metadata, and takes the plan's labels, annotations, owner
// references, address type, ports and endpoints; a delete is the existing
// object. existing must be the slices the plan was computed from: an
// update or delete of a slice not among them is an error (it would be an
// unconditional write, without a resourceVersion), and so is a nil slice.
func Objects(plan slicer.Plan, existing []*discovery.EndpointSlice) (creates, updates, deletes []*discovery.EndpointSlice, err error) {
	byName := make(map[string]*discovery.EndpointSlice, len(existing))
	var errs []error
	for i, s := range existing {
		if s == nil {
			errs = append(errs, fmt.Errorf("endpointslice: Objects: existing[%d]: must not be nil", i))
			continue
		}
		byName[s.Name] = s
	}
	for _, s := range plan.Updates {
		if byName[s.Name] == nil {
			errs = append(errs, fmt.Errorf("endpointslice: Objects: update of %q: no existing slice of that name", s.Name))
		}
	}
	for _, s := range plan.Deletes {
		if byName[s.Name] == nil {
			errs = append(errs, fmt.Errorf("endpointslice: Objects: delete of %q: no existing slice of that name", s.Name))
		}
	}
	if errs != nil {
		return nil, nil, nil, errors.Join(errs...)
	}
	for _, s := range plan.Creates {
		creates = append(creates, ToEndpointSlice(s))
	}
	for _, s := range plan.Updates {
		obj := ToEndpointSlice(s)
		meta := byName[s.Name].ObjectMeta.DeepCopy()
		meta.Labels, meta.Annotations, meta.OwnerReferences = obj.Labels, obj.Annotations, obj.OwnerReferences
		obj.ObjectMeta = *meta
		updates = append(updates, obj)
	}
	for _, s := range plan.Deletes {
		deletes = append(deletes, byName[s.Name])
	}
	return creates, updates, deletes, nil
}

// ToEndpointSlice converts a slicer slice to a discovery/v1 object. Zero
// values become nil pointers where the API has pointers (a port name ""
// becomes a pointer to "", as the controller writes it), Unset conditions
// nil, a zero target reference nil. Ports and endpoints are never nil.
func ToEndpointSlice(s slicer.Slice) *discovery.EndpointSlice {
	out := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:         s.Name,
			GenerateName: s.GenerateName,
			Namespace:    s.Namespace,
			Labels:       s.Labels,
			Annotations:  s.Annotations,
		},
		AddressType: discovery.AddressType(s.AddressType),
		Ports:       make([]discovery.EndpointPort, len(s.Ports)),
		Endpoints:   make([]discovery.Endpoint, len(s.Endpoints)),
	}
	for _, o := range s.Owners {
		out.OwnerReferences = append(out.OwnerReferences, metav1.OwnerReference{
			APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: types.UID(o.UID),
			Controller: ptrIf(o.Controller, o.Controller), BlockOwnerDeletion: ptrIf(o.BlockOwnerDeletion, o.BlockOwnerDeletion),
		})
	}
	for i, p := range s.Ports {
		proto := corev1.Protocol(p.Protocol)
		out.Ports[i] = discovery.EndpointPort{
			Name:        ptr(p.Name),
			Port:        ptrIf(p.Port, p.Port != 0),
			Protocol:    ptrIf(proto, proto != ""),
			AppProtocol: ptrIf(p.AppProtocol, p.AppProtocol != ""),
		}
	}
	for i, e := range s.Endpoints {
		out.Endpoints[i] = toEndpoint(e)
	}
	return out
}

func toEndpoint(e slicer.Endpoint) discovery.Endpoint {
	out := discovery.Endpoint{
		Addresses: append([]string(nil), e.Addresses...),
		Conditions: discovery.EndpointConditions{
			Ready: boolPtr(e.Conditions.Ready), Serving: boolPtr(e.Conditions.Serving), Terminating: boolPtr(e.Conditions.Terminating),
		},
		Hostname: ptrIf(e.Hostname, e.Hostname != ""),
		NodeName: ptrIf(e.NodeName, e.NodeName != ""),
		Zone:     ptrIf(e.Zone, e.Zone != ""),
	}
	if !e.TargetRef.IsZero() {
		r := e.TargetRef
		out.TargetRef = &corev1.ObjectReference{
			Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: types.UID(r.UID),
			APIVersion: r.APIVersion, ResourceVersion: r.ResourceVersion, FieldPath: r.FieldPath,
		}
	}
	out.Hints = hintsToAPI(e.Hints)
	return out
}

func ptr[T any](v T) *T { return &v }

func ptrIf[T any](v T, ok bool) *T {
	if !ok {
		return nil
	}
	return &v
}

func boolPtr(t slicer.Tristate) *bool {
	switch t {
	case slicer.True:
		return ptr(true)
	case slicer.False:
		return ptr(false)
	}
	return nil
}
