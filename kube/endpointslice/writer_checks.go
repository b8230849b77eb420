package endpointslice

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/fairslice/fairslice/slicer"
)

// syncChecks are the Writer's checks of a Sync's Service and groups,
// made before anything is written, and the options that relax them.
type syncChecks struct {
	fqdn       bool // WriterOptions.FQDN
	selector   bool // WriterOptions.AllowSelector
	undeclared bool // WriterOptions.AllowUndeclaredPortNames
}

// check returns every problem of a Sync of svc with desired, naming the
// group and the value.
func (c syncChecks) check(svc *corev1.Service, desired []slicer.Group) error {
	var errs []error
	if svc.Spec.Selector != nil && !c.selector {
		errs = append(errs, fmt.Errorf("endpointslice: Service %s/%s has a selector %v: kube-controller-manager publishes its endpoints; "+
			"set WriterOptions.AllowSelector if the caller owns them", svc.Namespace, svc.Name, svc.Spec.Selector))
	}
	declared := make([]string, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		declared[i] = p.Name
	}
	for i, g := range desired {
		prefix := fmt.Sprintf("endpointslice: groups[%d] ", i)
		if fqdn := g.AddressType == slicer.FQDN; fqdn != c.fqdn {
			want := "FQDN (WriterOptions.FQDN)"
			if !c.fqdn {
				want = "IPv4 or IPv6 (FQDN needs WriterOptions.FQDN)"
			}
			errs = append(errs, fmt.Errorf("%saddressType %q: the Writer writes %s", prefix, g.AddressType, want))
		}
		for _, err := range checkPorts(g.Ports, fmt.Sprintf("groups[%d].", i)) {
			errs = append(errs, fmt.Errorf("endpointslice: %w", err))
		}
		if c.undeclared {
			continue
		}
		for j, p := range g.Ports {
			if !slices.Contains(declared, p.Name) {
				errs = append(errs, fmt.Errorf("%sports[%d].name %q: not the name of a port of Service %s/%s (%q); "+
					"set WriterOptions.AllowUndeclaredPortNames to write it", prefix, j, p.Name, svc.Namespace, svc.Name, declared))
			}
		}
	}
	return errors.Join(errs...)
}
