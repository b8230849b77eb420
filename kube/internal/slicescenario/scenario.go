package slicescenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// ParseScenario reads Kubernetes YAML (or JSON) documents separated by
// "---" lines: exactly one Service, any number of Pods and Nodes, and the
// existing EndpointSlices. Unknown fields are errors. The objects are
// defaulted as the API server would store them (see Default), and
// apiVersion and kind are cleared, since objects from an informer carry
// neither. Every problem is reported, naming the document.
func ParseScenario(data []byte) (Input, error) {
	var in Input
	var errs []error
	for i, doc := range docSeparator.Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", i+1, err))
			continue
		}
		var meta metav1.ObjectMeta
		_ = yaml.Unmarshal([]byte(doc), &struct {
			Metadata *metav1.ObjectMeta `json:"metadata"`
		}{&meta})
		where := fmt.Sprintf("document %d", i+1)
		if tm.Kind != "" {
			where = fmt.Sprintf("%s (%s %q)", where, tm.Kind, meta.Name)
		}
		if err := checkQuantities([]byte(doc)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		var err error
		switch tm.Kind {
		case "Service":
			s := &corev1.Service{}
			if err = yaml.UnmarshalStrict([]byte(doc), s); err == nil {
				if in.Service != nil {
					err = errors.New("a second Service (a scenario has exactly one)")
				}
				in.Service = s
			}
		case "Pod":
			p := &corev1.Pod{}
			if err = yaml.UnmarshalStrict([]byte(doc), p); err == nil {
				in.Pods = append(in.Pods, p)
			}
		case "Node":
			n := &corev1.Node{}
			if err = yaml.UnmarshalStrict([]byte(doc), n); err == nil {
				in.Nodes = append(in.Nodes, n)
			}
		case "EndpointSlice":
			s := &discovery.EndpointSlice{}
			if err = yaml.UnmarshalStrict([]byte(doc), s); err == nil {
				in.Existing = append(in.Existing, s)
			}
		case "":
			err = errors.New("kind: missing")
		default:
			err = fmt.Errorf("kind: %q is not Service, Pod, Node or EndpointSlice", tm.Kind)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	if in.Service == nil && len(errs) == 0 {
		errs = append(errs, errors.New("no Service document"))
	}
	if len(errs) > 0 {
		return Input{}, fmt.Errorf("scenario: %w", errors.Join(errs...))
	}
	Default(&in)
	return in, nil
}

// checkQuantities names the field of a resource quantity that does not
// parse (a Node's status.allocatable and status.capacity, a container's
// resources), which strict decoding reports without the field.
func checkQuantities(doc []byte) error {
	type resources struct {
		Requests map[string]string `json:"requests"`
		Limits   map[string]string `json:"limits"`
	}
	var obj struct {
		Status struct {
			Allocatable map[string]string `json:"allocatable"`
			Capacity    map[string]string `json:"capacity"`
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
	check := func(field string, m map[string]string) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if _, err := resource.ParseQuantity(m[k]); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %q is not a quantity", field, k, m[k]))
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

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Default applies the API server's defaults that matter here, in place:
// Service port protocol TCP and target port = port; container port
// protocol TCP; pod status podIP and podIPs kept in sync; EndpointSlice
// port name "" and protocol TCP; pods and slices without a namespace get
// the Service's (objects from an informer always have one). It clears
// apiVersion and kind.
func Default(in *Input) {
	tcp := corev1.ProtocolTCP
	if in.Service != nil {
		for _, p := range in.Pods {
			if p.Namespace == "" {
				p.Namespace = in.Service.Namespace
			}
		}
		for _, s := range in.Existing {
			if s.Namespace == "" {
				s.Namespace = in.Service.Namespace
			}
		}
	}
	if s := in.Service; s != nil {
		s.TypeMeta = metav1.TypeMeta{}
		for i := range s.Spec.Ports {
			p := &s.Spec.Ports[i]
			if p.Protocol == "" {
				p.Protocol = tcp
			}
			if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
				p.TargetPort = intstr.FromInt32(p.Port)
			}
		}
	}
	for _, p := range in.Pods {
		p.TypeMeta = metav1.TypeMeta{}
		for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
			for i := range cs {
				for j := range cs[i].Ports {
					if cs[i].Ports[j].Protocol == "" {
						cs[i].Ports[j].Protocol = tcp
					}
				}
			}
		}
		st := &p.Status
		switch {
		case st.PodIP != "" && len(st.PodIPs) == 0:
			st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
		case st.PodIP == "" && len(st.PodIPs) > 0:
			st.PodIP = st.PodIPs[0].IP
		}
	}
	for _, n := range in.Nodes {
		n.TypeMeta = metav1.TypeMeta{}
	}
	for _, s := range in.Existing {
		s.TypeMeta = metav1.TypeMeta{}
		for i := range s.Ports {
			if s.Ports[i].Name == nil {
				s.Ports[i].Name = new(string)
			}
			if s.Ports[i].Protocol == nil {
				s.Ports[i].Protocol = &tcp
			}
		}
	}
}

// ReplayArgs returns the arguments of the fairslice command that replays
// in from a scenario file written by WriteScenario: "reconcile --all-pods
// --max-endpoints-per-slice N [--upstream] FILE". --all-pods because the
// Pods of the file are the ones the reconciler is given, not ones to
// select (the Service may have no selector, as in the differential test).
func ReplayArgs(in *Input, file string, upstream bool) []string {
	args := []string{"reconcile", "--all-pods", "--max-endpoints-per-slice", strconv.Itoa(in.Max())}
	if upstream {
		args = append(args, "--upstream")
	}
	return append(args, file)
}

// WriteScenario writes in as a scenario file, with a comment giving the
// command that replays it.
func WriteScenario(w io.Writer, in Input, comment string) error {
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(comment, "\n"), "\n") {
		fmt.Fprintf(&b, "# %s\n", line)
	}
	put := func(kind, apiVersion string, obj any) error {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "---\napiVersion: %s\nkind: %s\n%s", apiVersion, kind, data)
		return nil
	}
	if err := put("Service", "v1", in.Service); err != nil {
		return err
	}
	for _, p := range in.Pods {
		if err := put("Pod", "v1", p); err != nil {
			return err
		}
	}
	for _, n := range in.Nodes {
		if err := put("Node", "v1", n); err != nil {
			return err
		}
	}
	for _, s := range in.Existing {
		if err := put("EndpointSlice", "discovery.k8s.io/v1", s); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
