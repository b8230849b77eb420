package slicescenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	discovery "k8s.io/api/discovery/v1"

	"github.com/fairslice/fairslice/kube/endpointslice/adapter"
	"github.com/fairslice/fairslice/slicer"
)

// Content is what a reconciliation leaves in the Service's slices,
// normalised for what may differ between two correct controllers: slice
// names, the order of slices, ports and addresses, and which slice of a
// port set holds which endpoint (upstream places endpoints in map order).
type Content struct {
	// Slices has one line per slice: address type, ports, labels,
	// annotations, owner references and the number of endpoints, sorted.
	Slices []string
	// Endpoints has one line per endpoint: the slice's address type and
	// ports, then addresses, hostname, node name, zone, conditions,
	// target reference and hints, sorted.
	Endpoints []string
}

// ContentOf returns the content of the given slices.
func ContentOf(slices_ []*discovery.EndpointSlice) Content {
	c := Content{Slices: []string{}, Endpoints: []string{}}
	for _, s := range slices_ {
		key := string(s.AddressType) + " " + portsString(s.Ports)
		c.Slices = append(c.Slices, fmt.Sprintf("%s labels=%s annotations=%s owners=%s endpoints=%d",
			key, mapString(s.Labels), mapString(s.Annotations), ownersString(s), len(s.Endpoints)))
		for i := range s.Endpoints {
			c.Endpoints = append(c.Endpoints, key+" "+endpointString(&s.Endpoints[i]))
		}
	}
	slices.Sort(c.Slices)
	slices.Sort(c.Endpoints)
	return c
}

// PlanContent returns the content of existing after plan, with the
// objects Objects builds for it.
func PlanContent(plan slicer.Plan, existing []*discovery.EndpointSlice) (Content, error) {
	creates, updates, deletes, err := adapter.Objects(plan, existing)
	if err != nil {
		return Content{}, err
	}
	gone := map[string]bool{}
	for _, s := range deletes {
		gone[s.Name] = true
	}
	for _, s := range updates {
		gone[s.Name] = true
	}
	var final []*discovery.EndpointSlice
	for _, s := range existing {
		if !gone[s.Name] {
			final = append(final, s)
		}
	}
	final = append(append(final, updates...), creates...)
	return ContentOf(final), nil
}

func portsString(ports []discovery.EndpointPort) string {
	var out []string
	for _, p := range ports {
		out = append(out, fmt.Sprintf("%s:%s/%s(%s)", str(p.Name), num(p.Port), str((*string)(p.Protocol)), str(p.AppProtocol)))
	}
	slices.Sort(out)
	return "[" + strings.Join(out, ",") + "]"
}

func mapString(m map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return "{" + strings.Join(out, ",") + "}"
}

func ownersString(s *discovery.EndpointSlice) string {
	var out []string
	for _, o := range s.OwnerReferences {
		out = append(out, fmt.Sprintf("%s/%s/%s/%s/c=%s/b=%s", o.APIVersion, o.Kind, o.Name, o.UID, boolStr(o.Controller), boolStr(o.BlockOwnerDeletion)))
	}
	slices.Sort(out)
	return "[" + strings.Join(out, ",") + "]"
}

func endpointString(e *discovery.Endpoint) string {
	addrs := slices.Clone(e.Addresses)
	slices.Sort(addrs)
	ref := "-"
	if r := e.TargetRef; r != nil {
		ref = fmt.Sprintf("%s/%s/%s/%s/%s/%s", r.Kind, r.Namespace, r.Name, r.UID, r.APIVersion, r.FieldPath)
	}
	hints := "-"
	if h := e.Hints; h != nil {
		var zones, nodes []string
		for _, z := range h.ForZones {
			zones = append(zones, z.Name)
		}
		for _, n := range h.ForNodes {
			nodes = append(nodes, n.Name)
		}
		hints = fmt.Sprintf("zones=%v nodes=%v", zones, nodes)
	}
	return fmt.Sprintf("%v host=%s node=%s zone=%s ready=%s serving=%s terminating=%s ref=%s hints=%s",
		addrs, str(e.Hostname), str(e.NodeName), str(e.Zone),
		boolStr(e.Conditions.Ready), boolStr(e.Conditions.Serving), boolStr(e.Conditions.Terminating), ref, hints)
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func num(p *int32) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

func boolStr(p *bool) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}
