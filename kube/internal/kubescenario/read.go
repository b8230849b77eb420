package kubescenario

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// Scenario is one Service with the Nodes, Pods and existing EndpointSlices
// of an input, in input order.
type Scenario struct {
	Service *corev1.Service
	Nodes   []*corev1.Node
	Pods    []*corev1.Pod
	Slices  []*discovery.EndpointSlice
}

// The kinds Read decodes.
const (
	KindService       = "Service"
	KindNode          = "Node"
	KindPod           = "Pod"
	KindEndpointSlice = "EndpointSlice"
)

// Read decodes objs, which may only be of the given kinds (of Service,
// Node, Pod and EndpointSlice), into a Scenario: exactly one Service, any
// number of the others. Unknown fields are errors. Each error names the
// object's Source and the field: a missing name, an unparsable quantity, a
// kind not asked for, a second Service, two Nodes (or two Pods of one
// namespace) with the same name. Every problem is reported at once.
func Read(objs []Object, kinds ...string) (*Scenario, error) {
	sc := &Scenario{}
	var errs []error
	seen := map[string]bool{}
	for i := range objs {
		o := &objs[i]
		if err := sc.add(o, kinds, seen); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o, err))
		}
	}
	if sc.Service == nil && len(errs) == 0 {
		errs = append(errs, errors.New("no Service document"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("scenario: %w", errors.Join(errs...))
	}
	return sc, nil
}

// add decodes o into sc; seen holds the Nodes' and Pods' keys so far.
func (sc *Scenario) add(o *Object, kinds []string, seen map[string]bool) error {
	if !slices.Contains(kinds, o.Kind) {
		return fmt.Errorf("kind: %q is not %s", o.Kind, orList(kinds))
	}
	if o.Name == "" {
		return errors.New("metadata.name: missing")
	}
	if err := checkQuantities(o.Raw); err != nil {
		return err
	}
	if o.Kind == KindNode || o.Kind == KindPod {
		key := o.Kind + " " + o.Namespace + "/" + o.Name
		if seen[key] {
			return fmt.Errorf("metadata.name: duplicate %s %q", o.Kind, o.Name)
		}
		seen[key] = true
	}
	switch o.Kind {
	case KindService:
		if sc.Service != nil {
			return fmt.Errorf("a second Service (the first is %q)", sc.Service.Name)
		}
		return decode(o.Raw, &sc.Service)
	case KindNode:
		return decodeInto(o.Raw, &sc.Nodes)
	case KindPod:
		return decodeInto(o.Raw, &sc.Pods)
	default:
		return decodeInto(o.Raw, &sc.Slices)
	}
}

// decode decodes raw strictly into a new *T stored in *dst.
func decode[T any](raw []byte, dst **T) error {
	v := new(T)
	if err := yaml.UnmarshalStrict(raw, v); err != nil {
		return err
	}
	*dst = v
	return nil
}

// decodeInto decodes raw strictly and appends it to *list.
func decodeInto[T any](raw []byte, list *[]*T) error {
	var v *T
	if err := decode(raw, &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

func orList(kinds []string) string {
	if len(kinds) < 2 {
		return strings.Join(kinds, "")
	}
	return strings.Join(kinds[:len(kinds)-1], ", ") + " or " + kinds[len(kinds)-1]
}

// checkQuantities names the field of a resource quantity that does not
// parse (a Node's status.allocatable and status.capacity, a container's
// resources), which strict decoding reports without the field.
func checkQuantities(doc []byte) error {
	type resources struct {
		Requests map[string]any `json:"requests"`
		Limits   map[string]any `json:"limits"`
	}
	var obj struct {
		Status struct {
			Allocatable map[string]any `json:"allocatable"`
			Capacity    map[string]any `json:"capacity"`
		} `json:"status"`
		Spec struct {
			Containers []struct {
				Resources resources `json:"resources"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if yaml.Unmarshal(doc, &obj) != nil {
		return nil // strict decoding reports it
	}
	var errs []error
	check := func(field string, m map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			s := fmt.Sprint(m[k])
			if _, err := resource.ParseQuantity(s); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %q is not a quantity", field, k, s))
			}
		}
	}
	check("status.allocatable", obj.Status.Allocatable)
	check("status.capacity", obj.Status.Capacity)
	for i, c := range obj.Spec.Containers {
		check(fmt.Sprintf("spec.containers[%d].resources.requests", i), c.Resources.Requests)
		check(fmt.Sprintf("spec.containers[%d].resources.limits", i), c.Resources.Limits)
	}
	return errors.Join(errs...)
}
