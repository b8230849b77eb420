// Package kubescenario is the one reader of scenario inputs: Kubernetes YAML
// documents or concatenated JSON values, with kubectl's lists expanded,
// as the fairslice CLI and the differential tests give them. Objects
// splits an input into Objects, each naming its file and document; Read
// decodes them into a Scenario (a Service with its Nodes, Pods and
// EndpointSlices), with errors that name the object's file and document
// directly. ReadHints and RunHints are the hints and route commands'
// scenario and its reconciliation through fairslice.
package kubescenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/fairslice/fairslice/internal/yamldocs"
)

// Object is one Kubernetes object read from an input.
type Object struct {
	// Source names where the object came from: "apf.yaml: document 2",
	// "dump.json: document 1: items[3]", or "document 2" for an input
	// without a name.
	Source    string
	Kind      string
	Name      string
	Namespace string
	// Raw is the object as given (a YAML or JSON document), or as JSON
	// with kind set for a list's item. Decode it with sigs.k8s.io/yaml
	// into typed targets, which keeps YAML 1.1 look-alikes such as "n" or
	// "on" strings where the field is a string.
	Raw []byte
}

// String names the object and where it came from, as errors do:
// `apf.yaml: document 2 (Node "n1")`.
func (o *Object) String() string {
	kind := o.Kind
	if kind == "" {
		kind = "no kind"
	}
	return fmt.Sprintf("%s (%s %q)", o.Source, kind, o.Name)
}

// Objects splits data into objects; source names the input in each
// object's Source ("" leaves just "document N"). A List or a typed list
// (PodList, ...) becomes its items, which take the list's kind when they
// have none. Every problem is reported, naming the document.
func Objects(source string, data []byte) ([]Object, error) {
	docs := yamldocs.Split(data)
	if err := yamldocs.FirstErr(docs); err != nil {
		if source == "" {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var objs []Object
	var errs []error
	for _, doc := range docs {
		where := fmt.Sprintf("document %d", doc.N)
		if source != "" {
			where = source + ": " + where
		}
		got, err := expand(where, doc.Text, "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs = append(objs, got...)
	}
	return objs, errors.Join(errs...)
}

// expand returns the object in doc, or the items of a list; itemKind is
// the kind an item without one takes.
func expand(where string, doc []byte, itemKind string) ([]Object, error) {
	var head struct {
		Kind     string            `json:"kind"`
		Items    []json.RawMessage `json:"items"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, fmt.Errorf("%s: not a Kubernetes object: %v", where, err)
	}
	if head.Kind == "" && itemKind != "" {
		head.Kind = itemKind
		var m map[string]json.RawMessage
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		m["kind"] = json.RawMessage(strconv.Quote(itemKind))
		doc, _ = json.Marshal(m)
	}
	if head.Kind == "List" || (strings.HasSuffix(head.Kind, "List") && head.Items != nil) {
		kind := strings.TrimSuffix(head.Kind, "List")
		var objs []Object
		var errs []error
		for i, item := range head.Items {
			got, err := expand(fmt.Sprintf("%s: items[%d]", where, i), item, kind)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			objs = append(objs, got...)
		}
		return objs, errors.Join(errs...)
	}
	if head.Kind == "" {
		return nil, fmt.Errorf("%s: kind: missing", where)
	}
	return []Object{{Source: where, Kind: head.Kind, Name: head.Metadata.Name, Namespace: head.Metadata.Namespace, Raw: doc}}, nil
}
