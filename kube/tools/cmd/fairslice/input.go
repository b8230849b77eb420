package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/fairslice/fairslice/internal/yamldocs"
)

// The input grammar every command shares: files or "-" for standard input;
// YAML documents separated by "---" or concatenated JSON values; kubectl's
// List and typed lists (FlowSchemaList, PodList, ...) expanded into their
// items, which take the list's kind when they have none (as the API
// server's list responses print them). Fields a command does not know
// (managedFields, status, annotations) are kubectl's noise and are ignored
// where the object type has no such field. An input without any object is
// an error.

// object is one Kubernetes object read from an input.
type object struct {
	Source    string // "apf.yaml: document 2" or "dump.json: document 1: items[3]"
	Kind      string
	Name      string
	Namespace string
	// Raw is the object as given (a YAML or JSON document), or as JSON
	// with kind set for a list's item. Decode it with sigs.k8s.io/yaml
	// into typed targets, which keeps YAML 1.1 look-alikes such as "n" or
	// "on" strings where the field is a string.
	Raw []byte
}

// String names the object and where it came from, as errors do.
func (o *object) String() string {
	return fmt.Sprintf("%s (%s %q)", o.Source, orNoKind(o.Kind), o.Name)
}

func orNoKind(kind string) string {
	if kind == "" {
		return "no kind"
	}
	return kind
}

// inputName is how errors name an input: "standard input" for "-".
func inputName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}

// readInput reads a file, or standard input for "-".
func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// readObjects reads every object of the named inputs in order. Errors name
// the input and the document.
func readObjects(names ...string) ([]object, error) {
	var objs []object
	for _, name := range names {
		data, err := readInput(name)
		if err != nil {
			return nil, err
		}
		got, err := parseObjects(inputName(name), data)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			return nil, fmt.Errorf("%s: no objects (the input is empty)", inputName(name))
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// parseObjects splits data into objects; source names the input.
func parseObjects(source string, data []byte) ([]object, error) {
	docs := yamldocs.Split(data)
	if err := yamldocs.FirstErr(docs); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var objs []object
	var errs []error
	for _, doc := range docs {
		where := fmt.Sprintf("%s: document %d", source, doc.N)
		got, err := expandObject(where, doc.Text, "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs = append(objs, got...)
	}
	return objs, errors.Join(errs...)
}

// expandObject returns the object in doc, or the items of a list;
// itemKind is the kind an item without one takes.
func expandObject(where string, doc []byte, itemKind string) ([]object, error) {
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
		var objs []object
		var errs []error
		for i, item := range head.Items {
			got, err := expandObject(fmt.Sprintf("%s: items[%d]", where, i), item, kind)
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
	return []object{{Source: where, Kind: head.Kind, Name: head.Metadata.Name, Namespace: head.Metadata.Namespace, Raw: doc}}, nil
}

// pickObjects keeps the objects of the given kinds and reports the others
// on stderr, as not used by cmd.
func pickObjects(stderr io.Writer, cmd string, objs []object, kinds ...string) []object {
	var kept []object
	for i := range objs {
		used := false
		for _, k := range kinds {
			used = used || objs[i].Kind == k
		}
		if used {
			kept = append(kept, objs[i])
			continue
		}
		fmt.Fprintf(stderr, "fairslice %s: ignoring %s: %s uses only %s\n", cmd, objs[i].String(), cmd, strings.Join(kinds, ", "))
	}
	return kept
}

// joinDocs writes objs as one "---"-separated stream for the scenario
// parsers, which number documents from 1; sourceOf maps those numbers back.
func joinDocs(objs []object) []byte {
	var b bytes.Buffer
	for i := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(bytes.TrimRight(objs[i].Raw, "\n"))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

var docRef = regexp.MustCompile(`document (\d+)`)

// sourceOf rewrites "document N" in err's text, N counting objs from 1, as
// each object's source.
func sourceOf(err error, objs []object) error {
	if err == nil {
		return nil
	}
	text := docRef.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(m, "document "))
		if n < 1 || n > len(objs) {
			return m
		}
		return objs[n-1].Source
	})
	return errors.New(text)
}
