package adapter

// Existing discovery/v1 EndpointSlices → slicer slices, converted once
// per object.

import (
	"errors"
	"fmt"

	discovery "k8s.io/api/discovery/v1"

	"github.com/fairslice/fairslice/slicer"
)

// Existing converts the slices the controller lists (labelled with the
// Service's name and the controller's name) into slicer slices. Nil
// pointers become zero values: a nil port name, protocol or app protocol
// is "", a nil port 0, nil conditions Unset, a nil target reference the
// zero ObjectRef. Labels, annotations and endpoint addresses are shared
// with the objects, not copied. A nil slice is an error.
func (c *Converter) Existing(in []*discovery.EndpointSlice) ([]slicer.Slice, error) {
	return c.existing(in)
}

func (c *Converter) existing(in []*discovery.EndpointSlice) ([]slicer.Slice, error) {
	var errs []error
	for i, s := range in {
		if s == nil {
			errs = append(errs, fmt.Errorf("endpointslice: existing[%d]: must not be nil", i))
		}
	}
	if errs != nil {
		return nil, errors.Join(errs...)
	}
	if c.exist == nil {
		c.exist = make(map[*discovery.EndpointSlice]*sliceMemo, len(in))
	}
	c.gen++
	c.slices = c.slices[:0]
	var fresh []*discovery.EndpointSlice // not converted before
	eps, ports, owners := 0, 0, 0
	for _, s := range in {
		if c.exist[s] == nil {
			fresh = append(fresh, s)
			eps += len(s.Endpoints)
			ports += len(s.Ports)
			owners += len(s.OwnerReferences)
		}
	}
	if fresh != nil {
		// One block each for the new slices' memos, endpoints, ports and
		// owners.
		memos := make([]sliceMemo, len(fresh))
		a := sliceArena{
			eps:    make([]slicer.Endpoint, eps),
			ports:  make([]slicer.Port, ports),
			owners: make([]slicer.OwnerRef, owners),
		}
		for i, s := range fresh {
			memos[i].slice = a.convert(s)
			c.exist[s] = &memos[i]
		}
	}
	for _, s := range in {
		m := c.exist[s]
		m.gen = c.gen
		c.slices = append(c.slices, m.slice)
	}
	if len(c.exist) > 2*len(in)+16 {
		for s, m := range c.exist {
			if m.gen != c.gen {
				delete(c.exist, s)
			}
		}
	}
	return c.slices, nil
}

type sliceMemo struct {
	gen   uint32
	slice slicer.Slice
}

// sliceArena is the backing store of converted slices.
type sliceArena struct {
	eps    []slicer.Endpoint
	ports  []slicer.Port
	owners []slicer.OwnerRef
}

// take returns the first n elements of *s, removing them.
func take[T any](s *[]T, n int) []T {
	out := (*s)[:n:n]
	*s = (*s)[n:]
	return out
}

// convert converts one EndpointSlice into the arena's space.
func (a *sliceArena) convert(s *discovery.EndpointSlice) slicer.Slice {
	out := slicer.Slice{
		Name:         s.Name,
		GenerateName: s.GenerateName,
		Namespace:    s.Namespace,
		AddressType:  slicer.AddressType(s.AddressType),
		Ports:        take(&a.ports, len(s.Ports)),
		Endpoints:    take(&a.eps, len(s.Endpoints)),
		Labels:       s.Labels,
		Annotations:  s.Annotations,
	}
	for i := range s.Endpoints {
		fillEndpoint(&out.Endpoints[i], &s.Endpoints[i])
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		out.Ports[i] = slicer.Port{Name: deref(p.Name), Port: deref(p.Port), Protocol: string(deref(p.Protocol)), AppProtocol: deref(p.AppProtocol)}
	}
	if len(s.OwnerReferences) > 0 {
		out.Owners = take(&a.owners, len(s.OwnerReferences))
		for i, o := range s.OwnerReferences {
			out.Owners[i] = slicer.OwnerRef{
				APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: string(o.UID),
				Controller: deref(o.Controller), BlockOwnerDeletion: deref(o.BlockOwnerDeletion),
			}
		}
	}
	return out
}
