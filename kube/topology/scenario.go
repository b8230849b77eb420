package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fairslice/fairslice/internal/yamldocs"
)

// Scenario is one Service with its Nodes and Pods, as the fairslice hints
// and route commands read it.
type Scenario struct {
	Service *corev1.Service
	Nodes   []*corev1.Node
	Pods    []*corev1.Pod
}

// ParseScenario reads Kubernetes YAML (or JSON) documents separated by
// "---": exactly one Service, any number of Nodes and Pods. Errors name the
// document, the object and the field: a malformed document, an unknown
// kind, an unparsable quantity or IP, a second Service, or two Nodes or
// Pods with the same name. Every problem is reported at once.
func ParseScenario(data []byte) (*Scenario, error) {
	sc := &Scenario{}
	var errs []error
	nodes, pods := map[string]bool{}, map[string]bool{}
	for _, doc := range yamldocs.Split(data) {
		if doc.Err != nil {
			errs = append(errs, doc.Err)
			continue
		}
		where := fmt.Sprintf("document %d", doc.N)
		j := doc.JSON
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(j, &head); err != nil {
			errs = append(errs, fmt.Errorf("%s: not an object: %v", where, err))
			continue
		}
		if head.Metadata.Name == "" {
			errs = append(errs, fmt.Errorf("%s (%s): metadata.name: missing", where, orNone(head.Kind)))
			continue
		}
		where = fmt.Sprintf("%s (%s %q)", where, head.Kind, head.Metadata.Name)
		if err := checkQuantities(j); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", where, err))
			continue
		}
		switch head.Kind {
		case "Service":
			var s corev1.Service
			if err := strictUnmarshal(j, &s); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", where, err))
				continue
			}
			if sc.Service != nil {
				errs = append(errs, fmt.Errorf("%s: a second Service (the first is %q)", where, sc.Service.Name))
				continue
			}
			sc.Service = &s
		case "Node":
			var n corev1.Node
			if err := strictUnmarshal(j, &n); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", where, err))
				continue
			}
			if nodes[n.Name] {
				errs = append(errs, fmt.Errorf("%s: metadata.name: duplicate Node %q", where, n.Name))
				continue
			}
			nodes[n.Name] = true
			sc.Nodes = append(sc.Nodes, &n)
		case "Pod":
			var p corev1.Pod
			if err := strictUnmarshal(j, &p); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", where, err))
				continue
			}
			key := p.Namespace + "/" + p.Name
			if pods[key] {
				errs = append(errs, fmt.Errorf("%s: metadata.name: duplicate Pod %q", where, p.Name))
				continue
			}
			pods[key] = true
			sc.Pods = append(sc.Pods, &p)
		default:
			errs = append(errs, fmt.Errorf("%s: kind: %q is not Service, Node or Pod", where, head.Kind))
		}
	}
	if sc.Service == nil && len(errs) == 0 {
		errs = append(errs, errors.New("no Service in the scenario"))
	}
	if err := checkPodIPs(sc.Pods); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("topology scenario: %w", errors.Join(errs...))
	}
	if sc.Service.Namespace == "" {
		sc.Service.Namespace = "default"
	}
	for _, p := range sc.Pods {
		if p.Namespace == "" {
			p.Namespace = sc.Service.Namespace
		}
	}
	return sc, nil
}

func orNone(kind string) string {
	if kind == "" {
		return "no kind"
	}
	return kind
}

// strictUnmarshal decodes JSON into v, rejecting unknown fields so that a
// misspelt field is reported rather than ignored.
func strictUnmarshal(j []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(j))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// checkQuantities parses status.allocatable and status.capacity of a
// document itself, so that a bad quantity is reported with its field path
// rather than as a bare decoding error.
func checkQuantities(j []byte) error {
	var doc struct {
		Status struct {
			Allocatable map[string]any `json:"allocatable"`
			Capacity    map[string]any `json:"capacity"`
		} `json:"status"`
	}
	if json.Unmarshal(j, &doc) != nil {
		return nil // reported by the typed decode
	}
	for _, f := range []struct {
		name string
		m    map[string]any
	}{{"status.allocatable", doc.Status.Allocatable}, {"status.capacity", doc.Status.Capacity}} {
		for k, v := range f.m {
			s := fmt.Sprint(v)
			if _, err := resource.ParseQuantity(s); err != nil {
				return fmt.Errorf("%s.%s: %q is not a quantity: %v", f.name, k, s, err)
			}
		}
	}
	return nil
}

// checkPodIPs rejects two pods with the same IP: the scenario would publish
// one address twice.
func checkPodIPs(pods []*corev1.Pod) error {
	seen := map[string]string{}
	var errs []error
	for _, p := range pods {
		for i, ip := range p.Status.PodIPs {
			if other, ok := seen[ip.IP]; ok && other != p.Name {
				errs = append(errs, fmt.Errorf("pod %q: status.podIPs[%d]: %s is also the IP of pod %q", p.Name, i, ip.IP, other))
				continue
			}
			seen[ip.IP] = p.Name
		}
	}
	return errors.Join(errs...)
}
